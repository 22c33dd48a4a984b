package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/semaphore"
)

// The acquire-release cycle of each lock kind, uncontended, on 5 real
// redis-server nodes over go-redis, side by side: the mutex (TryAcquire +
// Release), a permit of a semaphore of 3 (TryAcquire + Release, with 0 and
// with 2 of the 3 permits held elsewhere: the attempt then tries slots
// until it finds the free one) and a multilock of 3 keys (Acquire: one
// round per key, kept alive from the first; Release: the keys at once).
//
//	cd bench && go test -run '^$' -bench 'Cycle' -benchtime 2000x .
func BenchmarkCycle(b *testing.B) {
	cl := redistest.StartT(b, 5)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, node.NewRedis(rc))
	}
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	const ttl = 10 * time.Second

	b.Run("mutex", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, err := c.TryAcquire(ctx, "bench-mutex", ttl)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, held := range []int{0, 2} {
		b.Run(fmt.Sprintf("semaphore-3-held-%d", held), func(b *testing.B) {
			name := fmt.Sprintf("bench-sem-%d", held)
			sem, err := semaphore.New(c, name, 3)
			if err != nil {
				b.Fatal(err)
			}
			for range held {
				p, err := sem.TryAcquire(ctx, time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = p.Release(ctx) })
			}
			b.ReportAllocs()
			for b.Loop() {
				p, err := sem.TryAcquire(ctx, ttl)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("multilock-3", func(b *testing.B) {
		keys := []string{"bench-ml:a", "bench-ml:b", "bench-ml:c"}
		b.ReportAllocs()
		for b.Loop() {
			m, err := multilock.Acquire(ctx, c, keys, ttl)
			if err != nil {
				b.Fatal(err)
			}
			if err := m.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
