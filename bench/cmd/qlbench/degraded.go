package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// degradedTTL is the lock TTL of the degraded scenario: quorumlock's
// per-node timeout is a tenth of it (200 ms), redsync's 5 % (100 ms).
const degradedTTL = 2 * time.Second

// releaseInFlight bounds the releases running in the background while the
// degraded scenario measures acquisitions (a release waits for the silent
// nodes until its timeout).
const releaseInFlight = 128

// scenarioDegraded: 5 nodes, healthy versus node 0 blackholed (accepts, never
// answers) and node 1 paused (SIGSTOP). Acquire latency only; each lock is
// released in the background.
func scenarioDegraded(e *env) error {
	bh, err := harness.StartBlackhole()
	if err != nil {
		return err
	}
	defer func() { _ = bh.Close() }()
	paused := e.cluster.Nodes()[1]
	defer func() { _ = paused.Resume() }()

	healthy := e.addrs[:5]
	degraded := append([]string{bh.Addr()}, e.addrs[1:5]...)
	type setup struct {
		cas    string
		addrs  []string
		pause  bool
		lockrs []*locker
	}
	cases := []*setup{{cas: "nodes=5/faults=none", addrs: healthy}, {cas: "nodes=5/faults=blackhole+paused", addrs: degraded, pause: true}}
	for _, s := range cases {
		if e.want(libQL) {
			ql, _, err := newQL(s.addrs, degradedTTL, nil)
			if err != nil {
				return err
			}
			s.lockrs = append(s.lockrs, ql)
		}
		if e.want(libQLRueidis) {
			qlr, _, err := newQLRueidis(s.addrs, degradedTTL, nil)
			if err != nil {
				return err
			}
			s.lockrs = append(s.lockrs, qlr)
		}
		if e.want(libRS) {
			rs, _ := newRS(libRS, s.addrs, degradedTTL, nil)
			rsf, _ := newRS(libRSFast, s.addrs, degradedTTL, nil, redsync.WithFailFast(true))
			s.lockrs = append(s.lockrs, rs, rsf)
		}
		defer func() {
			for _, l := range s.lockrs {
				l.close()
			}
		}()
	}
	lat := harness.NewLatencies(1 << 16)
	for rep := range e.prof.reps {
		for _, s := range cases {
			if s.pause {
				if err := paused.Pause(); err != nil {
					return err
				}
			} else if err := paused.Resume(); err != nil {
				return err
			}
			for _, l := range rotate(s.lockrs, rep) {
				keys := keyRing(fmt.Sprintf("d%d:%s:", rep, s.cas), 1<<14)
				ops, errs, c, summ := degradedBatch(e.ctx, l, keys, e.prof.degraded, lat)
				m := []harness.Metric{
					{Unit: "ns/op", Value: float64(c.elapsed.Nanoseconds()) / float64(max(ops, 1))},
					{Unit: "p50-ns", Value: ns(summ.P50)},
					{Unit: "p99-ns", Value: ns(summ.P99)},
					{Unit: "max-ns", Value: ns(summ.Max)},
					{Unit: "errors", Value: float64(errs)},
				}
				e.add("Degraded", s.cas, l.name, harness.Rep{N: ops, Metrics: m})
				progress("degraded %s %-16s rep %d/%d: %5d acquires p50 %-9s p99 %-9s max %-9s errors %d",
					s.cas, l.name, rep+1, e.prof.reps, ops, summ.P50.Round(time.Microsecond), summ.P99.Round(time.Microsecond),
					summ.Max.Round(time.Microsecond), errs)
			}
			if e.ctx.Err() != nil {
				return e.ctx.Err()
			}
		}
	}
	return paused.Resume()
}

// degradedBatch acquires distinct keys back to back for dur, timing each
// acquire; releases run in the background (at most releaseInFlight) and are
// awaited before it returns.
func degradedBatch(ctx context.Context, l *locker, keys []string, dur time.Duration, lat *harness.Latencies) (ops, errs int, c cost, s harness.Summary) {
	sem := make(chan struct{}, releaseInFlight)
	var wg sync.WaitGroup
	lat.Reset()
	c = measure(func() {
		deadline := time.Now().Add(dur)
		for i := 0; ; i++ {
			t0 := time.Now()
			h, err := l.acquire(ctx, keys[i%len(keys)])
			t1 := time.Now()
			ops++
			if err != nil {
				errs++
			} else {
				lat.Add(t1.Sub(t0))
				sem <- struct{}{}
				wg.Go(func() {
					rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 500*time.Millisecond)
					_ = l.release(rctx, h)
					cancel()
					<-sem
				})
			}
			if !t1.Before(deadline) || ctx.Err() != nil {
				return
			}
		}
	})
	wg.Wait()
	return ops, errs, c, lat.Summary()
}
