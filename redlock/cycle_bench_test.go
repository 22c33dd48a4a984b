package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
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
