package redlock_test

// Requests that reach a node after the lock was released there, on real
// redis-server nodes.

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// gatedNode runs the real Acquire only once gate is closed: a request that
// a slow link or a busy server delivers late.
type gatedNode struct {
	Node
	gate    chan struct{}
	extends bool // gate Extend instead of Acquire
}

func (g gatedNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if !g.extends {
		<-g.gate
	}
	return g.Node.Acquire(context.WithoutCancel(ctx), a)
}

func (g gatedNode) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	if g.extends {
		<-g.gate
	}
	return g.Node.Extend(context.WithoutCancel(ctx), ops)
}

// An acquire that reaches a node after the lock was
// released there cannot create the key (v1: it held the key for a full TTL
// with a token nobody owned).
func TestLateAcquireAfterReleaseCreatesNoKey(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 5)
	nodes := nodesOf(cl)
	gate := make(chan struct{})
	nodes[4] = gatedNode{Node: nodes[4].(Node), gate: gate}
	c := newClient(t, nodes, redlock.WithNodeTimeout(30*time.Second))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	close(gate)   // the acquire reaches node 4 only now
	_ = c.Close() // waits for it to be answered
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, "") != 5 {
		t.Fatalf("after release, a late acquire left keys: %v", h)
	}
}

// With a manual Extend, an extension that re-asserts a missing key and
// lands after Release cannot bring the key back.
func TestLateExtendAfterReleaseCreatesNoKey(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	nodes := nodesOf(cl)
	gate := make(chan struct{})
	nodes[2] = gatedNode{Node: nodes[2].(Node), gate: gate, extends: true}
	c := newClient(t, nodes, redlock.WithNodeTimeout(30*time.Second))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(key), l.Token())
	// Node 2 loses the key, so the extension would re-assert it there.
	if err := cl.Nodes()[2].Client().Del(ctx, c.KeyName(key)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	close(gate)
	_ = c.Close()
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, "") != 3 {
		t.Fatalf("after release, a late extend left keys: %v", h)
	}
}
