// Package cycles_test measures one acquire-release cycle of each lock kind
// next to the mutex's, on 5 real redis-server nodes over go-redis:
//
//	cd bench && go test -run '^$' -bench . -benchmem ./cycles
package cycles_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

func benchClient(b *testing.B) *redlock.Client {
	b.Helper()
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
	return c
}

// BenchmarkMutexCycle: TryAcquire + Release of one key, uncontended.
func BenchmarkMutexCycle(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.TryAcquire(ctx, "bench-mutex", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkElectionCycle: Campaign (uncontended: the election is free) +
// Resign. Campaign also starts the term's auto-extension, Resign stops it.
func BenchmarkElectionCycle(b *testing.B) {
	c := benchClient(b)
	e, err := election.New(c, "bench-election", election.WithTTL(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		t, err := e.Campaign(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := t.Resign(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
