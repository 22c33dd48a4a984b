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
	"github.com/quorumlock/quorumlock/redlock"
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
