package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// nodesOf wraps each real redis-server of the cluster in a RedisNode.
func nodesOf(c *redistest.Cluster) []node.Node {
	var nodes []node.Node
	for _, rc := range c.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	return nodes
}

func newClient(t *testing.T, nodes []node.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // release subscriptions, for goleak
	return c
}

// testNodeTimeout is the node timeout of clients on real nodes unless a
// test sets its own: long enough for a loaded 2-core machine (a timeout
// derived from a short TTL, 100ms for 1s, failed there), so the tests'
// TTLs are a few seconds.
const testNodeTimeout = 2 * time.Second

// start starts n real redis-server nodes and a client on them, with
// testNodeTimeout unless opts set another.
func start(t *testing.T, n int, opts ...redlock.Option) (*redistest.Cluster, *redlock.Client) {
	t.Helper()
	cl := redistest.StartT(t, n)
	return cl, newClient(t, nodesOf(cl), append([]redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}, opts...)...)
}

var keySeq atomic.Int64

func uniqueKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), keySeq.Add(1))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// holders reads the token of a lock key on every node ("" when absent or
// the node is down).
func holders(t *testing.T, c *redistest.Cluster, name string) []string {
	t.Helper()
	out := make([]string, 0, len(c.Nodes()))
	for _, n := range c.Nodes() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		v, err := n.Client().Get(ctx, name).Result()
		cancel()
		if err != nil && !errors.Is(err, redis.Nil) {
			v = ""
		}
		out = append(out, wire.ParseLockValue(v).Token)
	}
	return out
}

func countEqual(vals []string, want string) int {
	n := 0
	for _, v := range vals {
		if v == want {
			n++
		}
	}
	return n
}

// setOn makes "someone else" hold name on the given nodes, bypassing the
// client, the way a competing holder would.
func setOn(t *testing.T, c *redistest.Cluster, name, token string, ttl time.Duration, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		if err := c.Nodes()[i].Client().Set(context.Background(), name, token, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// slowNode answers like the node it wraps, but only after delay, whatever
// the context says: a node behind a stalled network or a paused process
// whose reply still arrives.
type slowNode struct {
	Node
	delay time.Duration
}

func (s slowNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := s.Node.Acquire(context.WithoutCancel(ctx), a)
	time.Sleep(s.delay)
	return r, err
}

// hangingNode performs the real acquire, then does not answer until the
// context ends: the write landed but the reply is lost.
type hangingNode struct{ node.Node }

func (h hangingNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if _, err := h.Node.Acquire(context.WithoutCancel(ctx), a); err != nil {
		return node.AcquireReply{}, err
	}
	<-ctx.Done()
	return node.AcquireReply{}, ctx.Err()
}

func startCluster(t *testing.T, n int) *redistest.Cluster { return redistest.StartT(t, n) }

// settled waits until every node holds token: Acquire returns at a majority,
// and the slower nodes' writes (or go-redis's resends of them) may still be
// on their way. Tests that restart a node must not race with them.
func settled(t *testing.T, c *redistest.Cluster, name, token string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard
	for countEqual(holders(t, c, name), token) != len(c.Nodes()) {
		if time.Now().After(deadline) {
			t.Fatalf("nodes never all held the lock: %v", holders(t, c, name))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventuallyFree waits for name to be gone from every node (up to a minute,
// a hang guard) and returns what the nodes hold then.
func eventuallyFree(t *testing.T, c *redistest.Cluster, name string) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		h := holders(t, c, name)
		if countEqual(h, "") == len(h) || time.Now().After(deadline) {
			return h
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startSlow starts 3 real nodes whose answers all come delay late.
func startSlow(t *testing.T, delay time.Duration, opts ...redlock.Option) (*redistest.Cluster, *redlock.Client) {
	t.Helper()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, slowNode{Node: n.(Node), delay: delay})
	}
	return cl, newClient(t, nodes, opts...)
}

// Node is a node with every optional capability: the tests' wrappers embed
// it, so that they forward the capabilities of the node they wrap.
type Node interface {
	node.Node
	node.Inspector
	node.ForceReleaser
	node.Subscriber
}
