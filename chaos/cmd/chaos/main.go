// Command chaos runs the fault-injection scenarios against five real
// redis-server nodes and prints one row per scenario. It exits 1 when a
// scenario's verdict is not the expected one.
//
//	go run ./cmd/chaos            # full profile (make chaos)
//	go run ./cmd/chaos -short     # CI profile, under a minute
//	go run ./cmd/chaos -only partition,gc-pause -duration 30s
//	go run ./cmd/chaos -only split-vote -rounds 1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/chaos"
)

func main() {
	short := flag.Bool("short", false, "run the short (CI) profile")
	only := flag.String("only", "", "comma-separated scenario names (default: all)")
	dur := flag.Duration("duration", 0, "time per scenario (default: the profile's)")
	out := flag.String("out", "chaos-out", "directory for chaos.json and the HTML timelines of violations")
	list := flag.Bool("list", false, "list the scenarios and exit")
	rounds := flag.Int("rounds", 0, "split-vote rounds (default: the profile's, 1000 full, 200 short)")
	flag.Parse()

	if *list {
		for _, s := range chaos.Scenarios() {
			fmt.Printf("%-18s %-15s %s\n", s.Name, s.Expect, s.What)
		}
		return
	}
	p := chaos.Full()
	if *short {
		p = chaos.Short()
	}
	if *dur > 0 {
		p.PerScenario = *dur
	}
	if *rounds > 0 {
		p.SplitRounds = *rounds
	}
	if *only != "" {
		p.Only = strings.Split(*only, ",")
	}
	p.OutDir, p.Progress = *out, os.Stdout

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	began := time.Now()
	rep, err := chaos.Run(ctx, p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	fmt.Println()
	fmt.Print(rep.Table())
	fmt.Printf("report: %s/chaos.json; wall time %s\n", p.OutDir, time.Since(began).Round(time.Second))
	if !rep.Pass {
		fmt.Println("UNEXPECTED VERDICT:")
		for _, r := range rep.Results {
			if !r.Pass {
				fmt.Printf("  %s: %s (timeline: %s)\n", r.Scenario, r.Verdict, r.Timeline)
			}
		}
		os.Exit(1)
	}
}
