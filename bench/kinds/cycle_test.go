// Package kinds benchmarks the acquire-release cycle of each kind of lock
// side by side on the same 5 real redis-server nodes over go-redis, each
// uncontended, on a key of its own: the mutex (TryAcquire + Release); a
// reader and the writer of the read-write lock (TryRLock / TryLock +
// Release); a permit of a semaphore of 3 (TryAcquire + Release), with 0 and
// with 2 of the 3 permits held elsewhere (the attempt then tries slots until
// it finds the free one); a multilock of 3 keys (Acquire: one round per key,
// kept alive from the first; Release: the keys at once); and an election
// (Campaign of a free election + Resign; Campaign also starts the term's
// auto-extension, Resign stops it).
//
//	cd bench && go test -run '^$' -bench . -benchtime 2000x -count 3 ./kinds
package kinds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
	"github.com/quorumlock/quorumlock/semaphore"
)

const ttl = 10 * time.Second

// cycle is one acquisition and its release.
type cycle func(ctx context.Context) error

func BenchmarkCycle(b *testing.B) {
	cl := redistest.StartT(b, 5)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	opts := []redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	rw, err := rwlock.New(nodes, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rw.Close() })
	ctx := context.Background()

	lockCycle := func(try func(context.Context, string, time.Duration) (*redlock.Lock, error), key string) cycle {
		return func(ctx context.Context) error {
			l, err := try(ctx, key, ttl)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}
	}
	semCycle := func(held int) cycle {
		sem, err := semaphore.New(c, fmt.Sprintf("bench-sem-%d", held), 3)
		if err != nil {
			b.Fatal(err)
		}
		for range held {
			p, err := sem.TryAcquire(ctx, 5*time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = p.Release(ctx) })
		}
		return func(ctx context.Context) error {
			p, err := sem.TryAcquire(ctx, ttl)
			if err != nil {
				return err
			}
			return p.Release(ctx)
		}
	}
	e, err := election.New(c, "bench-election", election.WithTTL(ttl))
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []struct {
		name string
		run  cycle
	}{
		{"mutex", lockCycle(c.TryAcquire, "bench-mutex")},
		{"reader", lockCycle(rw.TryRLock, "bench-reader")},
		{"writer", lockCycle(rw.TryLock, "bench-writer")},
		{"semaphore-3-held-0", semCycle(0)},
		{"semaphore-3-held-2", semCycle(2)},
		{"multilock-3", func(ctx context.Context) error {
			m, err := multilock.Acquire(ctx, c, []string{"bench-ml:a", "bench-ml:b", "bench-ml:c"}, ttl)
			if err != nil {
				return err
			}
			return m.Release(ctx)
		}},
		{"election", func(ctx context.Context) error {
			t, err := e.Campaign(ctx, "bench")
			if err != nil {
				return err
			}
			return t.Resign(ctx)
		}},
	} {
		b.Run(kind.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := kind.run(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
