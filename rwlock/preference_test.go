package rwlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/rwlock"
)

// Writer preference, counted: in each round a stream of readers (hand over
// hand, so that some reader always holds the lock) runs on a fresh key,
// then a writer asks. Once the writer's first attempt was refused, its
// intent is on a majority, so a reader whose acquisition began after that
// refusal must not get in before the writer. Counted over rounds on real
// nodes: the rounds where such a reader got in must be 0. (It leaked when
// a failed attempt's cleanup deleted the intent on nodes that refused late,
// and when a reader asking again after a split was re-admitted where its
// entry was, despite the intent.)
func TestNoNewReaderPassesWaitingWriter(t *testing.T) {
	cl := startCluster(t, 5)
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRetry(retry.Constant(100000, 2*time.Millisecond, 2*time.Millisecond))}
	const readers, rounds = 6, 24
	var stream [readers]*rwlock.Client
	for i := range stream {
		stream[i] = newClient(t, nodesOf(cl), opts...)
	}
	var refused atomic.Bool // the writer's first attempt of the round was refused
	writer := newClient(t, nodesOf(cl), append(opts, redlock.WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.Contended {
			refused.Store(true)
		}
	})))...)
	ctx := ctxFor(t)
	leaked, passed := 0, 0
	for range rounds {
		refused.Store(false)
		n := preferenceRound(t, ctx, stream[:], writer, uniqueKey(t), &refused)
		if n > 0 {
			leaked++
			passed += n
		}
	}
	t.Logf("%d rounds: in %d, %d readers that began after the writer's first refusal got in before it", rounds, leaked, passed)
	if leaked > 0 {
		t.Fatalf("in %d of %d rounds a reader that began after the writer's first refusal got in before the writer (%d readers in all), want 0",
			leaked, rounds, passed)
	}
}

// preferenceRound runs the readers hand over hand on key until the writer
// holds it, and returns how many reader acquisitions began after the
// writer's first refusal and returned before the writer got in.
func preferenceRound(t *testing.T, ctx context.Context, stream []*rwlock.Client, writer *rwlock.Client, key string, refused *atomic.Bool) int {
	t.Helper()
	var writerIn, stop atomic.Bool
	var passed atomic.Int64
	var started sync.WaitGroup
	var wg sync.WaitGroup
	// rlock takes the read lock and counts it when it began after the
	// writer's first refusal and ended before the writer got in.
	rlock := func(try func(context.Context, string, time.Duration) (*redlock.Lock, error)) (*redlock.Lock, error) {
		after := refused.Load()
		l, err := try(ctx, key, ttl)
		if err == nil && after && !writerIn.Load() {
			passed.Add(1)
		}
		return l, err
	}
	for _, c := range stream {
		started.Add(1)
		wg.Go(func() {
			cur, err := rlock(c.RLock)
			started.Done()
			if err != nil {
				t.Error(err)
				return
			}
			for !stop.Load() {
				next, err := rlock(c.TryRLock)
				_ = cur.Release(ctx)
				if err != nil { // a writer holds or waits: wait our turn
					if next, err = rlock(c.RLock); err != nil {
						t.Error(err)
						return
					}
				}
				cur = next
			}
			_ = cur.Release(ctx)
		})
	}
	started.Wait() // from here on some reader always holds the lock
	w, err := writer.Lock(ctx, key, ttl)
	writerIn.Store(true)
	stop.Store(true)
	if err != nil {
		wg.Wait()
		t.Fatalf("writer: %v", err)
	}
	_ = w.Release(ctx) // before the readers stop: they may be waiting for it
	wg.Wait()
	if !refused.Load() {
		t.Error("the writer was never refused, although readers held the lock")
	}
	return int(passed.Load())
}
