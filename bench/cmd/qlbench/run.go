package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// progress prints one line to stderr, prefixed with the time since start.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

var started = time.Now()

// cost is what a batch used: wall time and heap allocations of the whole
// process (the library, go-redis and the harness loop).
type cost struct {
	elapsed        time.Duration
	mallocs, bytes uint64
}

// measure runs f after a GC and reports its wall time and allocations.
func measure(f func()) cost {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	t0 := time.Now()
	f()
	el := time.Since(t0)
	runtime.ReadMemStats(&b)
	return cost{elapsed: el, mallocs: b.Mallocs - a.Mallocs, bytes: b.TotalAlloc - a.TotalAlloc}
}

// keyRing returns n distinct keys; cycles take them in turn, so the harness
// allocates no key strings while measuring.
func keyRing(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = prefix + strconv.Itoa(i)
	}
	return ks
}

// rotate returns ls rotated left by k: each repetition starts with another
// library so none always runs first (or right after a GC-heavy one).
func rotate[T any](ls []T, k int) []T {
	out := make([]T, 0, len(ls))
	for i := range ls {
		out = append(out, ls[(i+k)%len(ls)])
	}
	return out
}

func ns(d time.Duration) float64 { return float64(d.Nanoseconds()) }

// latencyMetrics are the usual per-op metrics of a batch.
func latencyMetrics(ops int, c cost, s harness.Summary, rateUnit string) []harness.Metric {
	ops = max(ops, 1)
	return []harness.Metric{
		{Unit: "ns/op", Value: float64(c.elapsed.Nanoseconds()) / float64(ops)},
		{Unit: "B/op", Value: float64(c.bytes) / float64(ops)},
		{Unit: "allocs/op", Value: float64(c.mallocs) / float64(ops)},
		{Unit: "p50-ns", Value: ns(s.P50)},
		{Unit: "p99-ns", Value: ns(s.P99)},
		{Unit: rateUnit, Value: float64(ops) / c.elapsed.Seconds()},
	}
}
