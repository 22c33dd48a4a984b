// Command executions is seed system 003: scheduled items (deviations) in
// PostgreSQL published by several workers, each exactly once, under a
// Redlock lock per item; the item's execution version is the lock's fence,
// written through sqlfence, so that a holder that lost its lock cannot mark
// it published after a newer one. It starts 5 redis-server nodes and a
// PostgreSQL server of its own.
//
//	go run ./executions [-workers 5] [-items 100]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
)

func main() {
	workers := flag.Int("workers", 5, "workers")
	items := flag.Int("items", 100, "scheduled items")
	flag.Parse()
	if err := runMain(*workers, *items); err != nil {
		fmt.Fprintln(os.Stderr, "executions:", err)
		os.Exit(1)
	}
}

func runMain(workers, items int) error {
	ctx := context.Background()
	env, err := seed.Start(ctx, 5, true)
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Printf("executions: %d workers x %d items, 5 redis-server nodes, PostgreSQL on %s\n", workers, items, env.PG.Addr())
	newClient := func(name string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(name))
	}
	st, c, err := run(ctx, env.DB, newClient, workers, items)
	if err != nil {
		return err
	}
	fmt.Printf("executions: published %d, skipped %d (locked elsewhere or already published), errors %d; by worker %v\n",
		st.Published, st.Skipped, len(st.Errors), st.ByWorker)
	fmt.Printf("executions: uploaded exactly once %d of %d, twice or more %d, not published %d, execution version 0: %d\n",
		c.UploadedOnce, c.Items, c.UploadedTwice, c.NotPublished, c.VersionZero)
	fmt.Printf("executions: lock attempts %d, latency p50 %v, p99 %v (seed target: under 100ms)\n",
		len(st.Latencies), st.percentile(0.50), st.percentile(0.99))
	for _, err := range st.Errors {
		fmt.Println("executions: error:", err)
	}
	if c.UploadedOnce != c.Items || len(st.Errors) > 0 {
		return fmt.Errorf("not every item published exactly once")
	}
	return nil
}
