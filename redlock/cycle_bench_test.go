package redlock_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

// BenchmarkCycle is one uncontended TryAcquire + Release on 5 real
// redis-server nodes over go-redis: the hot path, for allocations per cycle
// (bench/ compares it with redsync).
func BenchmarkCycle(b *testing.B) {
	cl := redistest.StartT(b, 5)
	c, err := redlock.New(nodesOf(cl), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.TryAcquire(ctx, "bench-cycle", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContended is 32 goroutines over 4 Clients on one key, 5 real
// nodes, blocking Acquire with the defaults, a 1 ms critical section: the
// bench's contended scenario. It reports the attempts each acquisition
// cost (every attempt is a round on every node) and those lost to a
// holder or to a split, counted by an observer, the wait p99, and the
// fewest ÷ most acquisitions of one goroutine over the whole run (the bench's batches
// are too short at 32 goroutines for that ratio to tell a fair order from
// a random one).
func BenchmarkContended(b *testing.B) {
	cl := redistest.StartT(b, 5)
	var attempts, held, splits atomic.Int64
	obs := observe.Func(func(e observe.Event) {
		switch {
		case e.Kind == observe.Attempt:
			attempts.Add(1)
		case e.Kind == observe.Contended && e.Reason == "split_vote":
			splits.Add(1)
		case e.Kind == observe.Contended:
			held.Add(1)
		}
	})
	var clients []*redlock.Client
	for range 4 {
		c, err := redlock.New(nodesOf(cl), redlock.WithObserver(obs))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	var wg sync.WaitGroup
	var got [32]int
	waits := make([][]time.Duration, len(got))
	for i := range got {
		c := clients[i%len(clients)]
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				start := time.Now()
				l, err := c.Acquire(context.Background(), "bench-contended", 8*time.Second)
				if err != nil {
					b.Error(err)
					return
				}
				got[i]++
				waits[i] = append(waits[i], time.Since(start))
				time.Sleep(time.Millisecond)
				_ = l.Release(context.Background())
			}
		})
	}
	wg.Wait()
	all := slices.Sorted(slices.Values(slices.Concat(waits...)))
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100])/1e6, "wait-p99-ms")
	}
	b.ReportMetric(float64(slices.Min(got[:]))/float64(max(slices.Max(got[:]), 1)), "fewest/most")
	b.ReportMetric(float64(attempts.Load())/float64(b.N), "attempts/acq")
	b.ReportMetric(float64(held.Load())/float64(b.N), "held/acq")
	b.ReportMetric(float64(splits.Load())/float64(b.N), "splits/acq")
}

// BenchmarkCycleWatched is BenchmarkCycle while another Client of the same
// nodes watches an unrelated key (Released), so its subscriptions are up:
// the cost, to the cycle, of a subscriber that hears releases it does not
// wait for.
func BenchmarkCycleWatched(b *testing.B) {
	cl := redistest.StartT(b, 5)
	c, err := redlock.New(nodesOf(cl), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	watcher, err := redlock.New(nodesOf(cl))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = watcher.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := watcher.Released(ctx, "bench-unrelated"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.TryAcquire(ctx, "bench-cycle", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
