package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
)

// 5 workers, 200 tasks (the program: 1,000) on 5 real nodes and a real
// PostgreSQL; worker-1 is killed holding its 10th task. Every task completes
// exactly once, the killed task is recovered by another worker that finds
// worker-1 as the previous lessee, and worker-1's late writes are refused.
func TestLeasesExactlyOnceWithAKilledWorker(t *testing.T) {
	env := seed.StartT(t, 5, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(envInt("LEASES_TEST_GUARD_S", 300))*time.Second) // a hang guard
	defer cancel()
	cfg := config{Workers: 5, Tasks: 200, LeaseTTL: time.Second, KillAfter: 10}
	rep, err := run(ctx, env.DB, func(name string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(name))
	}, cfg)
	if err != nil {
		dumpPending(t, env)
		t.Fatal(err)
	}
	t.Log(rep.summary(cfg, 0))
	if !rep.ok(cfg) {
		t.Fatalf("rules broken:\n%s\nerrors: %v", rep.summary(cfg, 0), rep.Errors)
	}
}

// dumpPending shows the tasks left pending and what the nodes say of their
// locks, for a run that did not finish.
func dumpPending(t *testing.T, env *seed.Env) {
	rows, err := env.DB.Query(`SELECT id, leased_by, lease_expiry::text, version, lock_fence FROM tasks WHERE state = 'pending'`)
	if err != nil {
		t.Log(err)
		return
	}
	defer rows.Close()
	c, _ := redlock.New(env.Nodes())
	defer c.Close()
	for rows.Next() {
		var id, version, fence int64
		var by, exp sql.NullString
		_ = rows.Scan(&id, &by, &exp, &version, &fence)
		info, err := c.Inspect(context.Background(), fmt.Sprintf("task:%d", id))
		t.Logf("pending task %d leased_by %v expiry %v version %d fence %d; lock held %v owner %q fence %d remaining %v (%v)",
			id, by.String, exp.String, version, fence, info.Held, info.Owner, info.Fence, info.Remaining, err)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
