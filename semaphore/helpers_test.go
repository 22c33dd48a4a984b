package semaphore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// backends are the node kinds every behaviour test runs on: real
// redis-server processes and memory nodes (rueidis: in its own module).
var backends = []string{"redis", "memory"}

// clientsOn returns k clients sharing 3 nodes of the given kind.
func clientsOn(t *testing.T, backend string, k int, opts ...redlock.Option) []*redlock.Client {
	t.Helper()
	var nodes []node.Node
	switch backend {
	case "redis":
		for _, rc := range redistest.StartT(t, 3).Clients() {
			nodes = append(nodes, redisnode.New(rc))
		}
	case "memory":
		nodes = []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	}
	return newClients(t, nodes, k, opts...)
}

func newClients(t *testing.T, nodes []node.Node, k int, opts ...redlock.Option) []*redlock.Client {
	t.Helper()
	var cs []*redlock.Client
	for range k {
		c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	return cs
}

var seq atomic.Int64

func uniqueName(t *testing.T) string { return fmt.Sprintf("%s-%d", t.Name(), seq.Add(1)) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// windows records the validity windows of permits: from the moment an
// acquisition returned to the earlier of its ValidUntil and the start of
// its release. maxDepth is the largest number of windows open at one
// instant.
type windows struct {
	mu sync.Mutex
	w  [][2]time.Time
}

func (ws *windows) add(from, to time.Time) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.w = append(ws.w, [2]time.Time{from, to})
}

func (ws *windows) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.w)
}

func (ws *windows) maxDepth() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	type ev struct {
		at    time.Time
		delta int
	}
	var evs []ev
	for _, w := range ws.w {
		evs = append(evs, ev{w[0], +1}, ev{w[1], -1})
	}
	// Ends sort before starts at the same instant: touching windows do not overlap.
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	depth, best := 0, 0
	for _, e := range evs {
		depth += e.delta
		best = max(best, depth)
	}
	return best
}
