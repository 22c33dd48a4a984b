package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// testNodeTimeout: long enough for a loaded 2-core machine; TTLs are a few
// seconds.
const testNodeTimeout = 2 * time.Second

func nodesOf(c *redistest.Cluster) []node.Node {
	var nodes []node.Node
	for _, rc := range c.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	return nodes
}

func newClient(t *testing.T, nodes []node.Node, opts ...redlock.Option) *rwlock.Client {
	t.Helper()
	c, err := rwlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// start starts n real redis-server nodes and a client on them.
func start(t *testing.T, n int, opts ...redlock.Option) (*redistest.Cluster, *rwlock.Client) {
	t.Helper()
	cl := redistest.StartT(t, n)
	return cl, newClient(t, nodesOf(cl), append([]redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}, opts...)...)
}

var keySeq atomic.Int64

func uniqueKey(t *testing.T) string { return fmt.Sprintf("%s-%d", t.Name(), keySeq.Add(1)) }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func startCluster(t *testing.T, n int) *redistest.Cluster { return redistest.StartT(t, n) }

// restartEmpty restarts every node of cl at once and checks that each came
// back empty.
func restartEmpty(t *testing.T, cl *redistest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(cl.Nodes()))
	for i, n := range cl.Nodes() {
		wg.Go(func() { errs[i] = n.Restart(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, n := range cl.Nodes() {
		if size, err := n.Client().DBSize(ctx).Result(); err != nil || size != 0 {
			t.Fatalf("node %d after restart: %d keys, %v; want an empty server", i, size, err)
		}
	}
}
