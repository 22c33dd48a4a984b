package redlock_test

import (
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// TestWaitersPollOverNodesWithoutSubscriber: over nodes that cannot
// subscribe, no call fails for it: Released gives a channel (that never
// fires), and a waiting Acquire gets the lock after the holder's release
// by the retry policy's delays.
func TestWaitersPollOverNodesWithoutSubscriber(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, bareNode{n})
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithRetry(retry.Constant(1000, 20*time.Millisecond, 0)))
	ctx := ctxFor(t)
	key := uniqueKey(t)

	if _, err := c.Released(ctx, key); err != nil {
		t.Fatalf("Released over nodes without Subscriber: %v, want a channel", err)
	}
	holder, err := c.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := c.Acquire(ctx, key, 30*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter over nodes without Subscriber: %v, want the lock after the release", err)
	}
}
