package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
)

func replicasOn(t *testing.T, env *seed.Env) []replica {
	t.Helper()
	var rs []replica
	for i := range 3 {
		name := fmt.Sprintf("replica-%d", i+1)
		c, single, err := newLockClient(env.Nodes(), name, slog.New(slog.DiscardHandler))
		if err != nil || single {
			t.Fatalf("newLockClient: %v (single %v)", err, single)
		}
		t.Cleanup(func() { _ = c.Close() })
		rs = append(rs, replica{name: name, client: c})
	}
	return rs
}

// Three replicas on 5 real nodes, an instant job: two fire at the same
// moment (split votes resolved), the third after they are done. The tick
// claim runs the job exactly once per tick. 30 ticks here; the program
// runs 100.
func TestExactlyOneRunPerTick(t *testing.T) {
	env := seed.StartT(t, 5, false)
	for _, late := range []bool{false, true} {
		res := runSchedulers(context.Background(), replicasOn(t, env), 30, fmt.Sprintf("penalties-%v", late), late, oncePerTick)
		t.Logf("late %v: %v", late, res)
		if res.exactlyOnce() != 30 || len(res.Errors) != 0 {
			t.Fatalf("late %v: not exactly once per tick: %v (errors %v)", late, res, res.Errors)
		}
	}
}

// Broken on purpose: a plain lock released at the end of an instant job
// lets the late replica run the tick again.
func TestPlainLockRunsLateTicksTwice(t *testing.T) {
	env := seed.StartT(t, 5, false)
	res := runSchedulers(context.Background(), replicasOn(t, env), 30, "cron:penalties", true, plainLock)
	t.Log(res)
	if res.twice() == 0 {
		t.Fatalf("the plain lock ran no tick twice: %v", res)
	}
}

// Without nodes the scheduler says so in its log and every replica runs
// (each has its own in-process lock): the single-instance mode is explicit.
func TestSingleInstanceModeIsLogged(t *testing.T) {
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	var rs []replica
	for i := range 2 {
		c, single, err := newLockClient(nil, fmt.Sprintf("replica-%d", i+1), logger)
		if err != nil || !single {
			t.Fatalf("newLockClient(nil) = single %v, %v", single, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		rs = append(rs, replica{name: fmt.Sprintf("replica-%d", i+1), client: c})
	}
	if !strings.Contains(log.String(), "single-instance mode") {
		t.Fatalf("no warning logged: %q", log.String())
	}
	res := runSchedulers(context.Background(), rs, 3, "penalties", false, oncePerTick)
	for tick, runs := range res.RunsOf {
		if runs != 2 {
			t.Fatalf("tick %d: %d runs, want 2 (one per process)", tick, runs)
		}
	}
}
