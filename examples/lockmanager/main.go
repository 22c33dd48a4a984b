// Command lockmanager is seed system 001: locks named by descriptors
// (kind:subject:predicate:resources), checked against policies, found by
// pattern and counted by subject (package lockdesc). It starts 5 redis-server
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
	}, coordinators, rounds)
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
	fmt.Printf("lockmanager: shared: %v\n", out.SharedRefusal)
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
	if once != rounds || len(out.Errors) > 0 {
		return fmt.Errorf("a round did not trigger exactly once, or errors")
	}
	return nil
}
