package main

import (
	"fmt"
	"sync"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// scenarioFloor: one PING round trip to one node, and a PING fanned out to
// five nodes at once (the network floor of any quorum operation). The
// SET NX PX + compare-and-delete floor runs as lib=floor inside the
// uncontended and parallel scenarios, beside the libraries.
func scenarioFloor(e *env) error {
	cs := newClientSet(e.addrs[:5], nil)
	defer cs.Close()
	cs.warm(e.ctx)
	lat := harness.NewLatencies(1 << 16)
	one := cs.clients[0]
	ch := make(chan error, len(cs.clients))
	var mu sync.Mutex
	cases := []struct {
		name string
		op   func(int) error
	}{
		{"op=ping/nodes=1", func(int) error { return one.Ping(e.ctx).Err() }},
		{"op=ping-fanout/nodes=5", func(int) error {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range cs.clients {
				go func() { ch <- c.Ping(e.ctx).Err() }()
			}
			var err error
			for range cs.clients {
				if e := <-ch; e != nil {
					err = e
				}
			}
			return err
		}},
	}
	for rep := range e.prof.reps {
		for _, c := range rotate(cases, rep) {
			ops, errs, cost := serialBatch(e.prof.floor, lat, c.op)
			s := lat.Summary()
			m := append(latencyMetrics(ops, cost, s, "ops/s"), harness.Metric{Unit: "errors", Value: float64(errs)})
			e.add("Floor", c.name, libRawRedis, harness.Rep{N: ops, Metrics: m})
			progress("floor %s rep %d/%d: %.0f ops/s p50 %s p99 %s", c.name, rep+1, e.prof.reps, float64(ops)/cost.elapsed.Seconds(), s.P50, s.P99)
		}
	}
	if e.ctx.Err() != nil {
		return fmt.Errorf("interrupted")
	}
	return nil
}
