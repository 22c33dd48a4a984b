package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/redis/go-redis/v9"
)

// answeredNode reports each Acquire and Extend it returned from.
type answeredNode struct {
	Node
	returned chan<- string
}

func (a answeredNode) Acquire(ctx context.Context, args node.AcquireArgs) (node.AcquireReply, error) {
	r, err := a.Node.Acquire(ctx, args)
	a.returned <- "acquire"
	return r, err
}

func (a answeredNode) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	r, err := a.Node.Extend(ctx, ops)
	a.returned <- "extend"
	return r, err
}

// tombstoned reports, per node, whether the tombstone of token on name
// exists.
func tombstoned(t *testing.T, cl *redistest.Cluster, name, token string) []bool {
	t.Helper()
	out := make([]bool, len(cl.Nodes()))
	for i, n := range cl.Nodes() {
		err := n.Client().Get(context.Background(), wire.TombstoneKey(name, token)).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		out[i] = err == nil
	}
	return out
}

// Release leaves a tombstone exactly on the nodes where a request of the
// lock did not come back: the node whose acquire (then whose extension) is
// held back past the release's wait gets one, the nodes that answered get
// none, and the late request creates no key. An acquire that comes back
// while the release waits for it needs no tombstone; after an extension
// the release does not wait, and tombstones the node at once.
func TestReleaseTombstonesOnlyUnansweredNodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op   string
		late bool // the request comes back only after the release's wait
	}{{"acquire", true}, {"extend", true}, {"acquire", false}, {"extend", false}} {
		t.Run(fmt.Sprintf("%s late=%v", tc.op, tc.late), func(t *testing.T) {
			cl := redistest.StartT(t, 5)
			nodes := nodesOf(cl)
			returned := make(chan string, 100)
			gate := make(chan struct{})
			var opened sync.Once
			open := func() { opened.Do(func() { close(gate) }) }
			nodes[4] = gatedNode{Node: nodes[4].(Node), gate: gate, extends: tc.op == "extend"}
			for i := range nodes {
				nodes[i] = answeredNode{Node: nodes[i].(Node), returned: returned}
			}
			// The release waits up to a quarter of the node timeout for
			// requests on their way: 2.5 s here, or the whole test when
			// the request comes back during the wait.
			timeout := 10 * time.Second
			if !tc.late {
				timeout = 10 * time.Minute
			}
			c := newClient(t, nodes, redlock.WithNodeTimeout(timeout), redlock.WithRecoveryPeriod(time.Hour))
			t.Cleanup(open) // runs before the client's Close, which waits for the held-back request
			ctx := ctxFor(t)
			key := uniqueKey(t)
			name := c.KeyName(key)
			l, err := c.TryAcquire(ctx, key, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			awaitReturns := func(what string, n int) {
				for range n {
					if got := <-returned; got != what {
						t.Fatalf("node returned from %s, want %s", got, what)
					}
				}
			}
			if tc.op == "acquire" {
				awaitReturns("acquire", 4) // node 4's is held back
			} else {
				awaitReturns("acquire", 5)
				settled(t, cl, name, l.Token())
				if err := cl.Nodes()[4].Client().Del(ctx, name).Err(); err != nil {
					t.Fatal(err)
				}
				if err := l.Extend(ctx, time.Hour); err != nil {
					t.Fatal(err)
				}
				awaitReturns("extend", 4) // node 4's is held back
			}
			// A node's reply reaches the client just after the node returned
			// to it: wait until the client saw the four replies.
			deadline := time.Now().Add(time.Minute) // a hang guard
			for !equalBools(l.Unanswered()[:4], make([]bool, 4)) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			want := []bool{false, false, false, false, tc.late || tc.op == "extend"}
			if want[4] {
				// Node 4's release goes out once its wait ran out.
				deadline := time.Now().Add(time.Minute) // a hang guard
				for !tombstoned(t, cl, name, l.Token())[4] && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			open()        // the held-back request lands only now
			_ = c.Close() // waits for the release of node 4
			if got := tombstoned(t, cl, name, l.Token()); !equalBools(got, want) {
				t.Fatalf("tombstones after release = %v, want %v", got, want)
			}
			if h := holders(t, cl, name); countEqual(h, "") != 5 {
				t.Fatalf("after release, the late %s left keys: %v", tc.op, h)
			}
		})
	}
}

// Without a request held back, the cycle leaves no tombstone anywhere.
func TestUncontendedCycleLeavesNoTombstone(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 5)
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(30*time.Second))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	for range 10 {
		l, err := c.TryAcquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c.Close() // the last node's release landed
		if got := tombstoned(t, cl, c.KeyName(key), l.Token()); !equalBools(got, make([]bool, 5)) {
			t.Fatalf("tombstones after an answered cycle = %v, want none", got)
		}
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

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

// Rule 4: a failed attempt releases on every node, including one that
// errored; contended nodes keep their holder.
func TestRuleFailedAttemptLeavesNoKey(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 5, redlock.WithRetry(retry.Never()))
	key := uniqueKey(t)
	setOn(t, cl, c.KeyName(key), "other", 10*time.Second, 0, 1)
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	_, err := c.TryAcquire(ctxFor(t), key, 5*time.Second)
	if err == nil {
		t.Fatal("acquired with 2 holders and 1 dead node of 5")
	}
	h := holders(t, cl, c.KeyName(key))
	if h[0] != "other" || h[1] != "other" || h[3] != "" || h[4] != "" {
		t.Fatalf("after failed attempt nodes hold %v; want other, other, -, none, none", h)
	}
}

// Rule 4: the caller's cancellation does not cut the clean-up short, even on
// nodes whose write landed but whose reply never came.
func TestRuleCancelledAttemptLeavesNoKey(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	nodes := nodesOf(cl)
	for i := 2; i < 5; i++ {
		nodes[i] = hangingNode{nodes[i]}
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(5*time.Second))
	key := uniqueKey(t)
	ctx, cancel := context.WithCancel(ctxFor(t))
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := c.Acquire(ctx, key, 30*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	_ = c.Close() // the undo runs in the background; Close waits for it
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, "") != 5 {
		t.Fatalf("cancelled attempt left keys: %v", h)
	}
}

var errUndoRefused = errors.New("release refused")

// refusingRelease acquires like the node it wraps, and fails every
// release: the undo of a failed attempt cannot reach it.
type refusingRelease struct{ node.Node }

func (refusingRelease) Release(context.Context, node.ReleaseArgs) (bool, error) {
	return false, errUndoRefused
}

// A failed attempt's undo that does not reach a node is reported to the
// observer (observe.UndoFailed, naming the node and its failure): the key
// it leaves there until its TTL ends shows in metrics.
func TestUndoFailedIsObserved(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	nodes := nodesOf(cl)
	nodes[0] = refusingRelease{nodes[0]}
	rec := &recorder{}
	c := newClient(t, nodes, redlock.WithObserver(rec), redlock.WithNodeTimeout(testNodeTimeout))
	key := uniqueKey(t)
	// Another token holds nodes 1 and 2: our attempt gets node 0 alone,
	// fails, and its undo must delete our key on node 0.
	setOn(t, cl, lockName(key), "someone-else", 10*time.Second, 1, 2)
	if _, err := c.TryAcquire(ctxFor(t), key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire with the key held on 2 of 3 nodes: %v", err)
	}
	_ = c.Close() // waits for the undo
	got := rec.of(key, observe.UndoFailed, "")
	if len(got) != 1 || got[0].Node != nodes[0].Name() || !errors.Is(got[0].Err, errUndoRefused) {
		t.Fatalf("observe.UndoFailed events %+v; want one for node %s wrapping the refusal", got, nodes[0].Name())
	}
	if got := holders(t, cl, lockName(key))[0]; got == "" {
		t.Error("node 0 has no key: the undo was not refused")
	}
}
