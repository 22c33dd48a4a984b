package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// The spread scenario: 5 nodes in different zones. Each node's connections
// add a fixed round trip on the client side (every Write waits that long
// before it is sent), the same for every library; each library then runs
// one uncontended acquire + release at a time, on a new key each cycle.
// A library that decides at a majority waits for the third-nearest node; one
// that waits for every node (redsync) waits for the farthest.

// spreadVariant is one placement of the 5 nodes: the round trip each
// node's connections add.
type spreadVariant struct {
	cas    string          // the result's case
	label  string          // in ratio names and progress lines
	keys   string          // key prefix of its cycles
	delays []time.Duration // added round trip of node 0..4
}

func msDurations(ms ...float64) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m * float64(time.Millisecond))
	}
	return out
}

var spreadVariants = []spreadVariant{
	{cas: "delays=spread/nodes=5", label: "spread", keys: "sp", delays: msDurations(0.5, 1, 2, 4, 8)},
	{cas: "delays=one-far/nodes=5", label: "one far node", keys: "sf", delays: msDurations(0.5, 0.5, 0.5, 0.5, 50)},
}

// spreadTarget is the target: quorumlock's cycle p50 and p99 at
// most this times redsync's, in both variants.
const spreadTarget = 0.6

// spreadWarmCycles run before a library's first batch of a variant, on
// keys of their own: its connection pools fill and its scripts load there,
// not in the measured cycles.
const spreadWarmCycles = 20

// delayConn delays every Write by a fixed time: the node's added round
// trip, paid once per request (go-redis writes a command or a pipeline in
// one Write and holds the connection until the reply).
type delayConn struct {
	net.Conn
	delay time.Duration
}

func (c *delayConn) Write(b []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Write(b)
}

// delayDialer dials TCP and, for a positive delay, wraps the connection in a
// delayConn.
func delayDialer(delay time.Duration) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: clientDialTimeout, KeepAlive: 5 * time.Minute}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || delay <= 0 {
			return c, err
		}
		return &delayConn{Conn: c, delay: delay}, nil
	}
}

// newDelayedClientSet is one go-redis client per node whose connections
// add delays[i] to every request of node i.
func newDelayedClientSet(addrs []string, delays []time.Duration) *clientSet {
	s := &clientSet{}
	for i, a := range addrs {
		s.clients = append(s.clients, newDialClient(a, nil, delayDialer(delays[i])))
	}
	return s
}

// spreadLockers builds quorumlock (go-redis node) and redsync (the ones
// want accepts), each over its own delayed clients: the same delay per
// node for both.
func spreadLockers(want func(string) bool, addrs []string, delays []time.Duration) ([]*locker, func(), error) {
	var ls []*locker
	closeAll := func() {
		for _, l := range ls {
			l.close()
		}
	}
	if want(libQL) {
		ql, _, err := newQLOver(newDelayedClientSet(addrs, delays), lockTTL)
		if err != nil {
			return nil, nil, err
		}
		ls = append(ls, ql)
	}
	if want(libRS) {
		rs, _ := newRSOver(libRS, newDelayedClientSet(addrs, delays), lockTTL)
		ls = append(ls, rs)
	}
	return ls, closeAll, nil
}

// countBatch runs op n times back to back on one goroutine (fewer if ctx
// ends), recording each call's latency; errs counts the failed calls and
// samples their messages.
func countBatch(ctx context.Context, n int, lat *harness.Latencies, op func(i int) error) (ops, errs int, sample map[string]int, c cost) {
	lat.Reset()
	sample = map[string]int{}
	c = measure(func() {
		for i := 0; i < n && ctx.Err() == nil; i++ {
			t0 := time.Now()
			err := op(i)
			lat.Add(time.Since(t0))
			ops++
			if err != nil {
				errs++
				sample[errLine(err, 120)]++
			}
		}
	})
	return ops, errs, sample, c
}

// scenarioSpread: per variant, each library's uncontended cycle on 5 nodes
// with added round trips, e.prof.spreadCycles cycles per batch.
func scenarioSpread(e *env) error {
	addrs := e.addrs[:5]
	n := e.prof.spreadCycles
	lat := harness.NewLatencies(n)
	e.report.Meta.Notes = append(e.report.Meta.Notes, fmt.Sprintf(
		"spread: client-side added round trip per node (each Write delayed): %s; %d sequential acquire+release cycles per batch, a new key each cycle, after %d warm-up cycles per library and variant",
		spreadDelaysNote(), n, spreadWarmCycles))
	for _, v := range spreadVariants {
		ls, closeAll, err := spreadLockers(e.want, addrs, v.delays)
		if err != nil {
			return err
		}
		err = spreadVariantRun(e, v, ls, n, lat)
		closeAll()
		if err != nil {
			return err
		}
	}
	return nil
}

func spreadVariantRun(e *env, v spreadVariant, ls []*locker, n int, lat *harness.Latencies) error {
	for _, l := range ls {
		warm := keyRing(v.keys+":warm:", spreadWarmCycles)
		for i := range warm {
			if err := l.cycle(e.ctx, warm[i]); err != nil && e.ctx.Err() == nil {
				progress("spread %s %s warm-up cycle: %v", v.label, l.name, err)
			}
		}
	}
	for rep := range e.prof.reps {
		for _, l := range rotate(ls, rep) {
			keys := keyRing(fmt.Sprintf("%s:%d:", v.keys, rep), n) // a new key each cycle
			ops, errs, sample, c := countBatch(e.ctx, n, lat, cycleOp(e.ctx, l, keys))
			s := lat.Summary()
			m := append(latencyMetrics(ops, c, s, "cycles/s"),
				harness.Metric{Unit: "max-ns", Value: ns(s.Max)},
				harness.Metric{Unit: "errors", Value: float64(errs)})
			e.add("Spread", v.cas, l.name, harness.Rep{N: max(ops, 1), Metrics: m})
			progress("spread %-12s %-10s rep %d/%d: %4d cycles p50 %-9s p99 %-9s max %-9s errors %d",
				v.label, l.name, rep+1, e.prof.reps, ops, s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond),
				s.Max.Round(time.Microsecond), errs)
			printTop(sample, "error: ")
			if e.ctx.Err() != nil {
				return e.ctx.Err()
			}
		}
	}
	return nil
}

// spreadDelaysNote lists the variants' delays for the report's notes.
func spreadDelaysNote() string {
	var parts []string
	for _, v := range spreadVariants {
		ds := make([]string, len(v.delays))
		for i, d := range v.delays {
			ds[i] = d.String()
		}
		parts = append(parts, fmt.Sprintf("%s (%s) nodes 0..4 %s", v.cas, v.label, strings.Join(ds, ", ")))
	}
	return strings.Join(parts, "; ")
}

// spreadRatios: quorumlock's cycle p50 and p99 against redsync's, per
// variant, with the target.
func spreadRatios(add addRatio) {
	const sc = "Spread"
	for _, v := range spreadVariants {
		for _, p := range []string{"p50", "p99"} {
			add(v.label+" cycle "+p+" vs redsync", sc, v.cas, libQL, v.cas, libRS, p+"-ns", "<=", spreadTarget, true, "lower is better")
		}
	}
}
