package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// contendedClients is how many Clients (processes, in real life) share the
// contended key; goroutine i uses client i%4.
const contendedClients = 4

// holdFor is the critical section of the contended scenario.
const holdFor = time.Millisecond

// contender is one library in one retry configuration: several independent
// clients of it.
type contender struct {
	lib     string
	clients []*locker
}

func (c *contender) close() {
	for _, l := range c.clients {
		l.close()
	}
}

func (e *env) contenders(addrs []string, retryCfg string) ([]*contender, error) {
	var out []*contender
	if e.want(libQL) {
		c := &contender{lib: libQL}
		var opts []redlock.Option
		if retryCfg == "1ms" {
			// The default count (10) with a 1 ms delay and no jitter.
			opts = append(opts, redlock.WithRetry(retry.Constant(10, time.Millisecond, 0)))
		}
		for range contendedClients {
			l, _, err := newQL(addrs, lockTTL, nil, opts...)
			if err != nil {
				return nil, err
			}
			c.clients = append(c.clients, l)
		}
		out = append(out, c)
	}
	if retryCfg == "default" {
		// Release notifications off, beside on (internal/wake).
		cs, err := e.noNotifyContenders(addrs)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	if e.want(libQLRueidis) {
		c := &contender{lib: libQLRueidis}
		var opts []redlock.Option
		if retryCfg == "1ms" {
			opts = append(opts, redlock.WithRetry(retry.Constant(10, time.Millisecond, 0)))
		}
		for range contendedClients {
			l, _, err := newQLRueidis(addrs, lockTTL, nil, opts...)
			if err != nil {
				return nil, err
			}
			c.clients = append(c.clients, l)
		}
		out = append(out, c)
	}
	if e.want(libFloor) && retryCfg == "default" {
		// The floor has one retry policy (a random delay under 1 ms); it
		// runs once per goroutine count.
		c := &contender{lib: libFloor}
		for range contendedClients {
			l, _ := newFloorContended(addrs, lockTTL)
			c.clients = append(c.clients, l)
		}
		out = append(out, c)
	}
	if e.want(libRS) {
		c := &contender{lib: libRS}
		var opts []redsync.Option
		if retryCfg == "1ms" {
			// The default tries (32) with a fixed 1 ms delay.
			opts = append(opts, redsync.WithRetryDelay(time.Millisecond))
		}
		for range contendedClients {
			l, _ := newRS(libRS, addrs, lockTTL, nil, opts...)
			c.clients = append(c.clients, l)
		}
		out = append(out, c)
	}
	return out, nil
}

// contendedStats is what one batch measured.
type contendedStats struct {
	acquired         int // before the deadline
	acquiredTotal    int // including the drain after it
	failed           int
	elapsed          time.Duration
	wait, handoff    harness.Summary
	handoffFromStart harness.Summary // from the holder calling Release
	handoffEarly     int             // handoffs counted as 0: won before the release returned
	perGoroutine     []int
	fairMin, fairMax int
	errSample        map[string]int // failure messages (first 80 bytes) and their counts
	// freeFrac is the fraction of the time during which someone waited
	// (inside Acquire) that the lock sat free: no holder between its
	// Acquire's return and its Release's return.
	freeFrac float64
}

// lockEvent is a change of the number of waiters and holders at an instant.
type lockEvent struct {
	at           time.Time
	dWait, dHeld int
}

// freeWhileWaiting sweeps the events: the time with at least one waiter,
// and of it the time with no holder.
func freeWhileWaiting(evs []lockEvent) (frac float64, waited time.Duration) {
	slices.SortStableFunc(evs, func(a, b lockEvent) int { return a.at.Compare(b.at) })
	var free time.Duration
	waiting, held := 0, 0
	for i, ev := range evs {
		if i > 0 && waiting > 0 {
			dt := ev.at.Sub(evs[i-1].at)
			waited += dt
			if held == 0 {
				free += dt
			}
		}
		waiting += ev.dWait
		held += ev.dHeld
	}
	if waited == 0 {
		return 0, 0
	}
	return float64(free) / float64(waited), waited
}

// contendedBatch runs g goroutines, each looping acquire (blocking, the
// library's retry policy) → hold → release on one key, for dur. After dur
// no goroutine starts a new acquisition; acquisitions in flight finish (so
// long waits are not cut off), bounded by a hard limit.
// rateMetrics are the figures of every contended batch that ran for d:
// time per acquisition, rate and wait percentiles.
func (st contendedStats) rateMetrics(d time.Duration) []harness.Metric {
	return []harness.Metric{
		{Unit: "ns/op", Value: float64(d.Nanoseconds()) / float64(max(st.acquired, 1))},
		{Unit: "acq/s", Value: float64(st.acquired) / d.Seconds()},
		{Unit: "wait-p50-ns", Value: ns(st.wait.P50)},
		{Unit: "wait-p99-ns", Value: ns(st.wait.P99)},
		{Unit: "wait-max-ns", Value: ns(st.wait.Max)},
	}
}

func contendedBatch(ctx context.Context, c *contender, key string, g int, dur time.Duration) contendedStats {
	hard, cancel := context.WithTimeout(ctx, dur+30*time.Second)
	defer cancel()
	errSample := map[string]int{}
	var (
		hmu     sync.Mutex
		handoff = newHandoffs()
		evs     = make([]lockEvent, 0, 1<<16)
	)
	event := func(at time.Time, dWait, dHeld int) {
		hmu.Lock()
		evs = append(evs, lockEvent{at, dWait, dHeld})
		hmu.Unlock()
	}
	waits := make([]*harness.Latencies, g)
	counts := make([]int, g)
	before := make([]int, g)
	fails := make([]int, g)
	start := time.Now()
	stopAt := start.Add(dur)
	var wg sync.WaitGroup
	for gi := range g {
		waits[gi] = harness.NewLatencies(1 << 12)
		l := c.clients[gi%len(c.clients)]
		wg.Go(func() {
			for time.Now().Before(stopAt) && hard.Err() == nil {
				t0 := time.Now()
				event(t0, 1, 0)
				h, err := l.acquire(hard, key)
				t1 := time.Now()
				if err != nil {
					event(t1, -1, 0)
					if hard.Err() == nil {
						fails[gi]++
						msg := err.Error()
						if len(msg) > 80 {
							msg = msg[:80]
						}
						hmu.Lock()
						errSample[msg]++
						hmu.Unlock()
					}
					continue
				}
				hmu.Lock()
				evs = append(evs, lockEvent{t1, -1, 1})
				handoff.acquired(t1)
				hmu.Unlock()
				waits[gi].Add(t1.Sub(t0))
				counts[gi]++
				if t1.Before(stopAt) {
					before[gi]++
				}
				time.Sleep(holdFor)
				hmu.Lock()
				handoff.releasing(time.Now())
				hmu.Unlock()
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(hard), 2*time.Second)
				_ = l.release(rctx, h)
				rcancel()
				t2 := time.Now()
				hmu.Lock()
				evs = append(evs, lockEvent{t2, 0, -1})
				handoff.released(t2)
				hmu.Unlock()
			}
		})
	}
	wg.Wait()
	st := contendedStats{elapsed: time.Since(start), perGoroutine: counts, errSample: errSample}
	all := harness.NewLatencies(1 << 14)
	for gi := range g {
		all.Merge(waits[gi])
		st.acquired += before[gi]
		st.acquiredTotal += counts[gi]
		st.failed += fails[gi]
	}
	st.freeFrac, _ = freeWhileWaiting(evs)
	st.wait = all.Summary()
	st.handoff, st.handoffFromStart, st.handoffEarly = handoff.lat.Summary(), handoff.fromStart.Summary(), handoff.early
	st.fairMin, st.fairMax = counts[0], counts[0]
	for _, n := range counts {
		st.fairMin, st.fairMax = min(st.fairMin, n), max(st.fairMax, n)
	}
	return st
}

// scenarioContended: 8 and 32 goroutines on one key over 4 Clients, 5
// nodes, blocking acquire with each library's default retries and with a
// 1 ms retry delay. Handoffs are expressed in round trips of one node: the
// p50 of PINGs of node 0 during the batch (and, for reference, idle before
// the repetition).
func scenarioContended(e *env) error {
	addrs := e.addrs[:5]
	for _, retryCfg := range []string{"default", "1ms"} {
		cs, err := e.contenders(addrs, retryCfg)
		if err != nil {
			return err
		}
		for _, g := range []int{8, 32} {
			cas := fmt.Sprintf("goroutines=%d/retry=%s", g, retryCfg)
			for rep := range e.prof.reps {
				idle := pingP50(e.ctx, addrs[0], 200)
				for _, c := range rotate(cs, rep) {
					if g != 32 && (c.lib == libQLNoNotify || c.lib == libQLRueidisNoNotify) {
						continue // the target is at 32 goroutines
					}
					key := fmt.Sprintf("c:%s:%d:%d", retryCfg, g, rep)
					stopPing := startPinger(e.ctx, addrs[0])
					st := contendedBatch(e.ctx, c, key, g, e.prof.contended)
					rtt := stopPing()
					rate := float64(st.acquired) / e.prof.contended.Seconds()
					m := append(st.rateMetrics(e.prof.contended), []harness.Metric{
						{Unit: "handoff-p50-ns", Value: ns(st.handoff.P50)},
						{Unit: "handoff-p99-ns", Value: ns(st.handoff.P99)},
						{Unit: "rtt-p50-ns", Value: ns(rtt)},
						{Unit: "rtt-idle-p50-ns", Value: ns(idle)},
						{Unit: "handoff-p50-rtt-idle", Value: ns(st.handoff.P50) / ns(max(idle, 1))},
						{Unit: "handoff-p50-rtt", Value: ns(st.handoff.P50) / ns(max(rtt, 1))},
						{Unit: "handoff-early", Value: float64(st.handoffEarly)},
						{Unit: "handoff-start-p50-ns", Value: ns(st.handoffFromStart.P50)},
						{Unit: "handoff-start-p50-rtt", Value: ns(st.handoffFromStart.P50) / ns(max(rtt, 1))},
						{Unit: "fair-min", Value: float64(st.fairMin)},
						{Unit: "fair-max", Value: float64(st.fairMax)},
						{Unit: "failed", Value: float64(st.failed)},
						{Unit: "free-frac", Value: st.freeFrac},
					}...)
					e.add("Contended", cas, c.lib, harness.Rep{N: max(st.acquired, 1), Metrics: m})
					progress("contended %s %-10s rep %d/%d: %5.0f acq/s wait p50 %-9s p99 %-9s max %-9s handoff p50 %-9s (%.1f RTT) p99 %-9s free %4.1f%% fair %d..%d failed %d",
						cas, c.lib, rep+1, e.prof.reps, rate, st.wait.P50.Round(time.Microsecond), st.wait.P99.Round(time.Microsecond),
						st.wait.Max.Round(time.Microsecond), st.handoff.P50.Round(time.Microsecond), ns(st.handoff.P50)/ns(max(rtt, 1)), st.handoff.P99.Round(time.Microsecond),
						100*st.freeFrac, st.fairMin, st.fairMax, st.failed)
					for msg, n := range st.errSample {
						progress("    %d× %s", n, msg)
					}
				}
				if e.ctx.Err() != nil {
					break
				}
			}
		}
		for _, c := range cs {
			c.close()
		}
		if e.ctx.Err() != nil {
			return e.ctx.Err()
		}
	}
	return nil
}
