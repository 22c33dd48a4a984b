// Command lockmanager is seed system 001: locks named by descriptors
// (kind:subject:predicate:resources), checked against policies, found by
// pattern and counted by subject (package lockdesc); shared and exclusive
// locks of one resource through the read-write lock (package rwlock). It starts 5 redis-server
// nodes of its own.
//
//	go run ./lockmanager [-coordinators 3] [-rounds 50]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

func main() {
	coordinators := flag.Int("coordinators", 3, "coordinators triggering the same consolidation")
	rounds := flag.Int("rounds", 50, "rounds")
	flag.Parse()
	if err := runMain(*coordinators, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "lockmanager:", err)
		os.Exit(1)
	}
}

func runMain(coordinators, rounds int) error {
	ctx := context.Background()
	env, err := seed.Start(ctx, 5, false)
	if err != nil {
		return err
	}
	defer env.Close()
	out, err := run(ctx, func(owner string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(owner))
	}, func() (*rwlock.Client, error) { return rwlock.New(env.Nodes()) }, coordinators, rounds)
	if err != nil {
		return err
	}
	once := 0
	for _, n := range out.TriggersPerRound {
		if n == 1 {
			once++
		}
	}
	fmt.Printf("lockmanager: %d coordinators x %d rounds on 5 redis-server nodes: consolidation triggered exactly once in %d rounds (%d triggers)\n",
		coordinators, rounds, once, out.Triggered)
	fmt.Printf("lockmanager: policy: %v\n", out.PolicyRefusal)
	fmt.Printf("lockmanager: shared, without a read-write lock: %v\n", out.SharedRefusal)
	fmt.Printf("lockmanager: shared, through rwlock: %d readers of %s held together; a writer meanwhile: %v; after they released: %v\n",
		out.Readers, "schema:access:tenant-123:VA-IRRL-LIN", out.WriterWhileRead, errOrOK(out.WriterAfter))
	fmt.Printf("lockmanager: all consolidation locks: %v\n", out.ConsolidationLocks)
	fmt.Printf("lockmanager: all locks of file set fs-abc123: %v\n", out.FileSetLocks)
	subjects := make([]string, 0, len(out.Metrics))
	for s := range out.Metrics {
		subjects = append(subjects, s)
	}
	sort.Strings(subjects)
	fmt.Print("lockmanager: held locks by subject:")
	for _, s := range subjects {
		fmt.Printf(" %s %d", s, out.Metrics[s])
	}
	fmt.Println()
	for _, err := range out.Errors {
		fmt.Println("lockmanager: error:", err)
	}
	if once != rounds || len(out.Errors) > 0 || out.Readers != 2 || out.WriterWhileRead == nil || out.WriterAfter != nil {
		return fmt.Errorf("a round did not trigger exactly once, or errors")
	}
	return nil
}

func errOrOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "acquired"
}
