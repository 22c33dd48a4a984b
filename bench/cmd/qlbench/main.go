// Command qlbench runs quorumlock side by side with redsync and the raw
// go-redis floor on real redis-server nodes it starts itself, and writes
// benchstat lines, a JSON report and one PNG chart per scenario.
//
//	go run ./cmd/qlbench               # short profile (a few minutes)
//	go run ./cmd/qlbench -full         # long profile
//	go run ./cmd/qlbench -only uncontended -libs quorumlock -cpuprofile cpu.out
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// profile sets how long each batch runs and how often it is repeated.
type profile struct {
	name         string
	reps         int
	floor        time.Duration // per batch
	uncontended  time.Duration
	parallel     time.Duration
	contended    time.Duration
	degraded     time.Duration
	silent       time.Duration
	held         time.Duration
	heldCounts   []int
	split        time.Duration // per batch of the split scenario
	spreadCycles int           // per batch of the spread scenario (a count: p99 needs the samples)
}

var (
	shortProfile = profile{name: "short", reps: 3,
		floor: 300 * time.Millisecond, uncontended: 500 * time.Millisecond, parallel: time.Second,
		contended: 2 * time.Second, degraded: 1500 * time.Millisecond, silent: time.Second, held: 15 * time.Second,
		heldCounts: []int{1000, 10000}, split: time.Second, spreadCycles: 500}
	fullProfile = profile{name: "full", reps: 7,
		floor: time.Second, uncontended: 2 * time.Second, parallel: 3 * time.Second,
		contended: 6 * time.Second, degraded: 4 * time.Second, silent: 3 * time.Second, held: 30 * time.Second,
		heldCounts: []int{1000, 10000}, split: 3 * time.Second, spreadCycles: 1000}
)

// Scenario names, in run order.
var allScenarios = []string{"floor", "uncontended", "parallel", "contended", "degraded", "silent", "held", "split", "scale"}

// optInScenarios run only when -only names them (in its order): they cost
// more than the short profile affords. spread: about a minute per
// repetition, most of it redsync's one-far-node batch (500 cycles of at
// least two 50 ms round trips).
var optInScenarios = []string{"spread"}

// TTL of the locks: redsync's default expiry, for both libraries.
const lockTTL = 8 * time.Second

type env struct {
	ctx     context.Context
	prof    profile
	cluster *redistest.Cluster
	addrs   []string // of all started nodes
	report  *harness.Report
	libs    map[string]bool // libraries to run; all when empty
	outDir  string
	errs    []error // failed checks: reported after the outputs are written
}

func (e *env) want(lib string) bool {
	if len(e.libs) == 0 {
		return true
	}
	if lib == libRSFast {
		return e.libs[libRS] || e.libs[libRSFast]
	}
	return e.libs[lib]
}

// add records one repetition and prints its benchstat line.
func (e *env) add(scenario, cas, lib string, rep harness.Rep) {
	r := e.report.Add(scenario, cas, lib, rep)
	fmt.Println(r.BenchLine(rep))
}

func main() {
	full := flag.Bool("full", false, "run the long profile")
	out := flag.String("out", "results", "directory for bench.txt, results.json and the charts")
	only := flag.String("only", "", "comma-separated scenarios to run (default all: "+strings.Join(allScenarios, ",")+
		"; opt-in, only when named: "+strings.Join(optInScenarios, ",")+")")
	libs := flag.String("libs", "", "comma-separated libraries to run (quorumlock, quorumlock-nonotify, quorumlock-rueidis, quorumlock-rueidis-nonotify, redsync, floor, rueidis-floor, raw, raw-record); default all")
	reps := flag.Int("reps", 0, "repetitions per case (default per profile)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memprofile := flag.String("memprofile", "", "write an allocation profile at the end to this file")
	flag.DurationVar(&scaleHeldTTL, "scale-ttl", scaleHeldTTL, "TTL of the scale scenario's kept locks")
	flag.Parse()

	prof := shortProfile
	if *full {
		prof = fullProfile
	}
	if *reps > 0 {
		prof.reps = *reps
	}
	scen := allScenarios
	if *only != "" {
		scen = strings.Split(*only, ",")
		for _, s := range scen {
			if !slices.Contains(allScenarios, s) && !slices.Contains(optInScenarios, s) {
				fmt.Fprintf(os.Stderr, "unknown scenario %q (have %s)\n", s, strings.Join(append(slices.Clone(allScenarios), optInScenarios...), ","))
				os.Exit(2)
			}
		}
	}
	if err := run(prof, scen, *libs, *out, *cpuprofile, *memprofile); err != nil {
		fmt.Fprintln(os.Stderr, "qlbench:", err)
		os.Exit(1)
	}
}

func run(prof profile, scenarios []string, libs, outDir, cpuprofile, memprofile string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	redistest.DiscardRedisLogs()
	maxNodes := 5
	if slices.Contains(scenarios, "uncontended") {
		maxNodes = slices.Max(uncontendedNodes)
	}
	progress("starting %d redis-server nodes (profile %s, %d reps, GOMAXPROCS %d)", maxNodes, prof.name, prof.reps, runtime.GOMAXPROCS(0))
	cl, err := redistest.Start(ctx, maxNodes, redistest.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }()

	e := &env{ctx: ctx, prof: prof, cluster: cl, addrs: cl.Addrs(), outDir: outDir, report: &harness.Report{}}
	if libs != "" {
		e.libs = map[string]bool{}
		for _, l := range strings.Split(libs, ",") {
			e.libs[l] = true
		}
	}
	e.report.Meta = harness.Meta{
		Date: time.Now().UTC(), Profile: prof.name, GoVersion: runtime.Version(), GOOS: runtime.GOOS,
		GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(), CPUModel: harness.CPUModel(), Reps: prof.reps,
		Redis: redisVersion(ctx, cl),
		Notes: []string{
			fmt.Sprintf("lock TTL %s for every scenario except degraded (%s) and silent (%s)", lockTTL, degradedTTL, silentTTL),
			"each library has its own go-redis clients (ContextTimeoutEnabled) to the same nodes; libraries alternate, the order rotating each repetition",
			"B/op and allocs/op are whole-process heap allocations per operation (library, go-redis and harness), from runtime.MemStats",
		},
	}

	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}

	for _, s := range scenarios {
		if ctx.Err() != nil {
			break
		}
		progress("== scenario %s", s)
		var err error
		switch s {
		case "floor":
			err = scenarioFloor(e)
		case "uncontended":
			err = scenarioUncontended(e)
		case "parallel":
			err = scenarioParallel(e)
		case "contended":
			err = scenarioContended(e)
		case "degraded":
			err = scenarioDegraded(e)
		case "silent":
			err = scenarioSilent(e)
		case "held":
			err = scenarioHeld(e)
		case "split":
			err = scenarioSplit(e)
		case "scale":
			err = scenarioScale(e)
		case "spread":
			err = scenarioSpread(e)
		}
		if err != nil {
			return fmt.Errorf("scenario %s: %w", s, err)
		}
		if err := e.chart(s); err != nil {
			progress("chart %s: %v", s, err)
		}
	}

	if memprofile != "" {
		f, err := os.Create(memprofile)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
		_ = f.Close()
	}

	e.report.Ratios = append(ratios(e.report), floorRatios(e.report)...)
	bf, err := os.Create(filepath.Join(outDir, "bench.txt"))
	if err != nil {
		return err
	}
	if err := e.report.WriteBench(bf); err != nil {
		return err
	}
	if err := bf.Close(); err != nil {
		return err
	}
	if err := e.report.WriteJSON(filepath.Join(outDir, "results.json")); err != nil {
		return err
	}
	printSummary(os.Stdout, e.report)
	printRatios(os.Stdout, e.report.Ratios)
	printFloorTable(os.Stdout, e.report)
	progress("wrote %s, %s and %d chart(s) in %s", "bench.txt", "results.json", len(e.report.Charts), outDir)
	return errors.Join(append(e.errs, ctx.Err())...)
}

func redisVersion(ctx context.Context, cl *redistest.Cluster) string {
	info, err := cl.Clients()[0].Info(ctx, "server").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return ""
}
