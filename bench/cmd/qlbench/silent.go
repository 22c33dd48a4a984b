package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/redlock"
)

// silentTTL is the lock TTL of the silent scenario: quorumlock's node
// timeout is then its cap, 1 s; redsync's is 5 % of it (500 ms).
const silentTTL = 10 * time.Second

// silentGoroutines make contended single attempts, over silentClients
// clients of each library.
const (
	silentGoroutines = 8
	silentClients    = 2
)

// tryer is one library's single attempt (quorumlock TryAcquire, redsync
// with one try, the floor deciding at a majority) and a holder of the same
// library that keeps the key meanwhile.
type tryer struct {
	lib    string
	holder *locker
	tries  []func(ctx context.Context, key string) (any, error)
	rels   []func(ctx context.Context, h any) error
	closes []func()
}

func (t *tryer) close() {
	t.holder.close()
	for _, c := range t.closes {
		c()
	}
}

func (e *env) tryers(addrs []string) ([]*tryer, error) {
	var out []*tryer
	qlTryer := func(lib string, mk func() (*locker, *redlock.Client, error)) error {
		h, _, err := mk()
		if err != nil {
			return err
		}
		t := &tryer{lib: lib, holder: h}
		for range silentClients {
			l, c, err := mk()
			if err != nil {
				return err
			}
			t.tries = append(t.tries, func(ctx context.Context, key string) (any, error) { return c.TryAcquire(ctx, key, silentTTL) })
			t.rels = append(t.rels, l.release)
			t.closes = append(t.closes, l.close)
		}
		out = append(out, t)
		return nil
	}
	if e.want(libQL) {
		if err := qlTryer(libQL, func() (*locker, *redlock.Client, error) { return newQL(addrs, silentTTL, nil) }); err != nil {
			return nil, err
		}
	}
	if e.want(libQLRueidis) {
		if err := qlTryer(libQLRueidis, func() (*locker, *redlock.Client, error) { return newQLRueidis(addrs, silentTTL, nil) }); err != nil {
			return nil, err
		}
	}
	if e.want(libRS) {
		h, _ := newRS(libRS, addrs, silentTTL, nil)
		t := &tryer{lib: libRS, holder: h}
		for range silentClients {
			l, _ := newRS(libRS, addrs, silentTTL, nil, redsync.WithTries(1))
			t.tries = append(t.tries, l.acquire)
			t.rels = append(t.rels, l.release)
			t.closes = append(t.closes, l.close)
		}
		out = append(out, t)
	}
	if e.want(libFloor) {
		h, _ := newFloorContended(addrs, silentTTL)
		t := &tryer{lib: libFloor, holder: h}
		for range silentClients {
			l, try := newFloorContended(addrs, silentTTL)
			t.tries = append(t.tries, try)
			t.rels = append(t.rels, l.release)
			t.closes = append(t.closes, l.close)
		}
		out = append(out, t)
	}
	return out, nil
}

// silentBatch: the holder takes key (on every node), then fault() runs
// (node 4 stops, or nothing); silentGoroutines loop single attempts on the
// key for dur (attempts in flight at the end finish), timing each; then
// heal() and the holder releases.
func silentBatch(ctx context.Context, t *tryer, key string, dur time.Duration, fault func() error, heal func() error) (s harness.Summary, acquired int, err error) {
	h, err := t.holder.acquire(ctx, key)
	if err != nil {
		return s, 0, fmt.Errorf("%s holder: %w", t.lib, err)
	}
	defer func() {
		if herr := heal(); herr != nil && err == nil {
			err = herr
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = t.holder.release(rctx, h)
		cancel()
	}()
	if err := fault(); err != nil {
		return s, 0, err
	}
	all := harness.NewLatencies(1 << 14)
	var mu sync.Mutex
	var wg sync.WaitGroup
	stopAt := time.Now().Add(dur)
	for g := range silentGoroutines {
		try, rel := t.tries[g%len(t.tries)], t.rels[g%len(t.rels)]
		wg.Go(func() {
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				t0 := time.Now()
				got, err := try(ctx, key)
				d := time.Since(t0)
				mu.Lock()
				all.Add(d)
				if err == nil {
					acquired++ // the holder holds: this must not happen
				}
				mu.Unlock()
				if err == nil {
					_ = rel(context.WithoutCancel(ctx), got)
				}
			}
		})
	}
	wg.Wait()
	return all.Summary(), acquired, nil
}

// scenarioSilent: a key held by another client of the same library;
// contended single attempts on 5 healthy nodes versus node 4 stopped
// (SIGSTOP). Latency of the attempt (all of them lose).
func scenarioSilent(e *env) error {
	addrs := e.addrs[:5]
	silent := e.cluster.Nodes()[4]
	defer func() { _ = silent.Resume() }()
	ts, err := e.tryers(addrs)
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range ts {
			t.close()
		}
	}()
	cases := []struct {
		cas   string
		pause bool
	}{{"nodes=5/faults=none", false}, {"nodes=5/faults=silent", true}}
	for rep := range e.prof.reps {
		for _, c := range cases {
			for _, t := range rotate(ts, rep) {
				if err := silent.Resume(); err != nil {
					return err
				}
				key := fmt.Sprintf("s:%d:%s", rep, c.cas)
				fault := func() error { return nil }
				if c.pause {
					fault = silent.Pause
				}
				sum, acquired, err := silentBatch(e.ctx, t, key, e.prof.silent, fault, silent.Resume)
				if err != nil {
					return err
				}
				m := []harness.Metric{
					{Unit: "ns/op", Value: ns(sum.Mean)},
					{Unit: "p50-ns", Value: ns(sum.P50)},
					{Unit: "p99-ns", Value: ns(sum.P99)},
					{Unit: "max-ns", Value: ns(sum.Max)},
					{Unit: "acquired", Value: float64(acquired)},
				}
				e.add("Silent", c.cas, t.lib, harness.Rep{N: max(sum.N, 1), Metrics: m})
				progress("silent %s %-18s rep %d/%d: %5d attempts p50 %-9s p99 %-9s max %-9s acquired %d (must be 0)",
					c.cas, t.lib, rep+1, e.prof.reps, sum.N, sum.P50.Round(time.Microsecond), sum.P99.Round(time.Microsecond),
					sum.Max.Round(time.Microsecond), acquired)
				if e.ctx.Err() != nil {
					return e.ctx.Err()
				}
			}
		}
	}
	return silent.Resume()
}
