// Command status is seed system 004: service statuses in PostgreSQL written
// by an API server (DEPLOYING), a worker (RUNNING or FAILED) and a
// reconciliation loop (what the containers say), each with its own lock
// client, all through statuslock.WithStatusLock and the fenced SQL store of
// package sqlfence. One worker freezes holding a service's status lock; the
// reconciler corrects the service once the lock has expired, and the worker's
// late RUNNING is refused by the database. It starts 5 redis-server nodes and
// a PostgreSQL server of its own.
//
//	go run ./status [-services 20]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
)

func main() {
	cfg := config{Paused: "svc-03", Crashing: "svc-07", PauseTTL: time.Second}
	flag.IntVar(&cfg.Services, "services", 20, "services")
	flag.Parse()
	if err := runMain(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "status:", err)
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
	fmt.Printf("status: %d services; api, worker, reconciler on 5 redis-server nodes; statuses in PostgreSQL on %s\n", cfg.Services, env.PG.Addr())
	out, err := run(ctx, env.DB, func(owner string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(owner))
	}, cfg)
	if err != nil {
		return err
	}
	fmt.Print(out.summary(cfg))
	if !out.ok() {
		return fmt.Errorf("wrong final statuses or errors")
	}
	return nil
}

func (o *outcome) ok() bool { return len(o.Wrong) == 0 && len(o.Errors) == 0 && o.LateRunning != nil }

func (o *outcome) summary(cfg config) string {
	counts := map[string]int{}
	for _, s := range o.Final {
		counts[string(s)]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := "status: final statuses:"
	for _, k := range keys {
		s += fmt.Sprintf(" %s %d", k, counts[k])
	}
	s += fmt.Sprintf("; wrong %d; errors %d\n", len(o.Wrong), len(o.Errors))
	s += fmt.Sprintf("status: reconciler: %d passes until every service was reconciled; corrected %v\n", o.Passes, o.Corrected)
	s += fmt.Sprintf("status: the paused worker's late RUNNING on %s: %v\n", cfg.Paused, o.LateRunning)
	for _, err := range o.Errors {
		s += fmt.Sprintf("status: error: %v\n", err)
	}
	return s
}
