// Command leases is seed system 002: task leases. Workers lease tasks from a
// PostgreSQL table (leased_by, lease_expiry, version), each lease a Redlock
// lock per task kept alive while the task runs. One worker is killed holding a
// task; its lease expires and another worker recovers the task (redlock's
// TookOver names the killed worker). Every task completes exactly once, and
// the killed worker's late writes (a version-checked completion, a fenced
// update) are refused by the database. It starts 5 redis-server nodes and a
// PostgreSQL server of its own.
//
//	go run ./leases [-workers 5] [-tasks 1000]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
)

func main() {
	cfg := config{LeaseTTL: time.Second, KillAfter: 10}
	flag.IntVar(&cfg.Workers, "workers", 5, "workers")
	flag.IntVar(&cfg.Tasks, "tasks", 1000, "tasks")
	flag.Parse()
	if err := runMain(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "leases:", err)
		os.Exit(1)
	}
}

func runMain(cfg config) error {
	ctx := context.Background()
	env, err := seed.Start(ctx, 5, true)
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Printf("leases: %d workers, %d tasks, lease %v, 5 redis-server nodes, PostgreSQL on %s\n", cfg.Workers, cfg.Tasks, cfg.LeaseTTL, env.PG.Addr())
	start := time.Now()
	rep, err := run(ctx, env.DB, func(name string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(name))
	}, cfg)
	if err != nil {
		return err
	}
	fmt.Println("leases:", rep.summary(cfg, time.Since(start)))
	for _, err := range rep.Errors {
		fmt.Println("leases: error:", err)
	}
	if !rep.ok(cfg) {
		return fmt.Errorf("the run broke a rule (see above)")
	}
	return nil
}
