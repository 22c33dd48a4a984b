package multilock_test

import (
	"context"
	"fmt"
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

// prefixed names keys apart per test.
func prefixed(t *testing.T, keys ...string) []string {
	p := fmt.Sprintf("%s-%d:", t.Name(), seq.Add(1))
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p + k
	}
	return out
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
