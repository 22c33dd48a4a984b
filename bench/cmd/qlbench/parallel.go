package main

import (
	"fmt"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

const parallelGoroutines = 16

// scenarioParallel: 16 goroutines cycling on distinct keys, 5 nodes.
func scenarioParallel(e *env) error {
	ls, closeAll, err := e.lockers(e.addrs[:5])
	if err != nil {
		return err
	}
	defer closeAll()
	g := parallelGoroutines
	lats := make([]*harness.Latencies, g)
	for i := range lats {
		lats[i] = harness.NewLatencies(1 << 15)
	}
	all := harness.NewLatencies(1 << 18)
	cas := fmt.Sprintf("goroutines=%d/nodes=5", g)
	for rep := range e.prof.reps {
		for _, l := range rotate(ls, rep) {
			keys := make([][]string, g)
			for gi := range keys {
				keys[gi] = keyRing(fmt.Sprintf("p%d:%d:", rep, gi), 1<<12)
			}
			ops, errs, c := parallelBatch(g, e.prof.parallel, lats, func(gi, i int) error {
				k := keys[gi]
				return l.cycle(e.ctx, k[i%len(k)])
			})
			all.Reset()
			for _, lt := range lats {
				all.Merge(lt)
			}
			s := all.Summary()
			m := append(latencyMetrics(ops, c, s, "cycles/s"), harness.Metric{Unit: "errors", Value: float64(errs)})
			e.add("Parallel", cas, l.name, harness.Rep{N: ops, Metrics: m})
			progress("parallel %s %-10s rep %d/%d: %6.0f cycles/s p50 %-9s p99 %-9s %5.1f allocs/op errors %d",
				cas, l.name, rep+1, e.prof.reps, float64(ops)/c.elapsed.Seconds(), s.P50, s.P99, float64(c.mallocs)/float64(ops), errs)
		}
		if e.ctx.Err() != nil {
			return e.ctx.Err()
		}
	}
	return nil
}
