// Package kinds benchmarks the acquire-release cycle of each kind of lock
// side by side on the same 5 real redis-server nodes:
//
//	cd bench && go test -run '^$' -bench . -benchtime 2000x ./kinds
package kinds

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

const ttl = 10 * time.Second

// BenchmarkCycle is one uncontended single attempt and release per
// iteration: the mutex (redlock.TryAcquire), a reader (rwlock.TryRLock)
// and the writer (rwlock.TryLock), each on its own key.
func BenchmarkCycle(b *testing.B) {
	cl := redistest.StartT(b, 5)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, node.NewRedis(rc))
	}
	opts := []redlock.Option{redlock.WithNodeTimeout(2 * time.Second)}
	mutex, err := redlock.New(nodes, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mutex.Close() })
	rw, err := rwlock.New(nodes, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rw.Close() })
	ctx := context.Background()
	for _, kind := range []struct {
		name string
		try  func(ctx context.Context, key string, ttl time.Duration) (*redlock.Lock, error)
	}{
		{"mutex", mutex.TryAcquire},
		{"reader", rw.TryRLock},
		{"writer", rw.TryLock},
	} {
		b.Run(kind.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, err := kind.try(ctx, "bench-"+kind.name, ttl)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
