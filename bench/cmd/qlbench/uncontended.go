package main

import (
	"fmt"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// lockers builds the floor, the raw floor, quorumlock (on go-redis and on rueidis) and redsync over addrs (the ones e
// wants).
func (e *env) lockers(addrs []string) ([]*locker, func(), error) {
	var ls []*locker
	closeAll := func() {
		for _, l := range ls {
			l.close()
		}
	}
	if e.want(libFloor) {
		ls = append(ls, newFloor(addrs, lockTTL))
	}
	for _, lib := range []string{libRaw, libRawRecord} {
		if !e.want(lib) {
			continue
		}
		raw, err := newRaw(addrs, lockTTL, lib == libRawRecord)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ls = append(ls, raw)
	}
	if e.want(libQL) {
		ql, _, err := newQL(addrs, lockTTL, nil)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ls = append(ls, ql)
	}
	if e.want(libQLRueidis) {
		qlr, _, err := newQLRueidis(addrs, lockTTL, nil)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ls = append(ls, qlr)
	}
	if e.want(libRS) {
		rs, _ := newRS(libRS, addrs, lockTTL, nil)
		ls = append(ls, rs)
	}
	if e.want(libRueidisFloor) {
		rf, err := newRueidisFloor(addrs, lockTTL)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ls = append(ls, rf)
	}
	return ls, closeAll, nil
}

// uncontendedNodes are the node counts of the uncontended scenario; run
// starts as many nodes as the largest.
var uncontendedNodes = []int{1, 3, 5, 7, 9}

// scenarioUncontended: acquire + release on distinct keys, one goroutine,
// on 1, 3, 5, 7 and 9 nodes.
func scenarioUncontended(e *env) error {
	lat := harness.NewLatencies(1 << 18)
	for _, n := range uncontendedNodes {
		if n > len(e.addrs) {
			break
		}
		ls, closeAll, err := e.lockers(e.addrs[:n])
		if err != nil {
			return err
		}
		cas := fmt.Sprintf("nodes=%d", n)
		for rep := range e.prof.reps {
			for _, l := range rotate(ls, rep) {
				keys := keyRing(fmt.Sprintf("u%d:%d:", n, rep), 1<<14)
				calls0, callsErr0 := serverCalls(e.ctx, e.cluster.Clients()[:n])
				srv0, cli0 := serverCPU(e.ctx, e, n), cpuTime()
				ops, errs, c := serialBatch(e.prof.uncontended, lat, cycleOp(e.ctx, l, keys))
				srv1, cli1 := serverCPU(e.ctx, e, n), cpuTime()
				calls1, callsErr1 := serverCalls(e.ctx, e.cluster.Clients()[:n])
				s := lat.Summary()
				m := append(latencyMetrics(ops, c, s, "cycles/s"),
					harness.Metric{Unit: "client-cpu-us/op", Value: float64((cli1 - cli0).Microseconds()) / float64(ops)},
					harness.Metric{Unit: "server-cpu-us/op", Value: float64((srv1 - srv0).Microseconds()) / float64(ops)},
					harness.Metric{Unit: "errors", Value: float64(errs)})
				if callsErr0 == nil && callsErr1 == nil {
					m = append(m, harness.Metric{Unit: "server-cmds/op", Value: float64(calls1-calls0) / float64(ops)})
				}
				e.add("Uncontended", cas, l.name, harness.Rep{N: ops, Metrics: m})
				progress("uncontended %s %-10s rep %d/%d: %6.0f cycles/s p50 %-9s p99 %-9s %5.1f allocs/op errors %d",
					cas, l.name, rep+1, e.prof.reps, float64(ops)/c.elapsed.Seconds(), s.P50, s.P99, float64(c.mallocs)/float64(ops), errs)
			}
			if e.ctx.Err() != nil {
				closeAll()
				return e.ctx.Err()
			}
		}
		closeAll()
	}
	return nil
}
