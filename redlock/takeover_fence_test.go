package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// lateAnswerNode performs an acquire at once but holds its answer until gate
// closes (or the request's context ends): a node whose grant arrives after
// the acquisition was decided without it.
type lateAnswerNode struct {
	Node
	gate chan struct{}
}

func (g lateAnswerNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := g.Node.Acquire(context.WithoutCancel(ctx), a)
	select {
	case <-g.gate:
		return r, err
	case <-ctx.Done():
		return node.AcquireReply{}, ctx.Err()
	}
}

// TookOver's Fence when the nodes' counters drifted apart (nodes 0 and 1
// counted far more acquisitions than node 2). The holder's acquisition is
// decided on nodes 0 and 1; node 2 grants it after that, with its own,
// much lower count in its trail. The holder dies; another client's attempt
// won node 1 and was undone there, taking the trail with it; the successor
// is decided on nodes 1 and 2, so node 2's trail is the only one it finds.
// When the holder extended its lock once (as every kept-alive lock does),
// the extension raised node 2's trail to the holder's fence, and TookOver
// reports at least that fence. When it never extended, TookOver reports
// node 2's own count: the limit its doc states.
func TestTookOverFenceWithDriftingCounters(t *testing.T) {
	t.Parallel()
	for _, extended := range []bool{true, false} {
		t.Run(map[bool]string{true: "extended", false: "never-extended"}[extended], func(t *testing.T) {
			cl := startCluster(t, 3)
			ctx := ctxFor(t)
			key := uniqueKey(t)
			real := nodesOf(cl)
			gate := make(chan struct{})
			holderClient := newClient(t, []node.Node{real[0], real[1], lateAnswerNode{real[2].(Node), gate}},
				redlock.WithOwner("holder"), redlock.WithNodeTimeout(testNodeTimeout))
			name := holderClient.KeyName(key)
			for i, count := range []int{1_000_000, 1_000_000, 100} {
				if err := cl.Clients()[i].Set(ctx, wire.CounterKey(name), count, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			held, err := holderClient.TryAcquire(ctx, key, time.Minute)
			close(gate)
			if err != nil {
				t.Fatal(err)
			}
			if held.Fence() != 1_000_001 {
				t.Fatalf("holder's fence %d, want 1000001 (decided on nodes 0 and 1)", held.Fence())
			}
			for holders(t, cl, name)[2] != held.Token() && ctx.Err() == nil { // node 2's late grant
				time.Sleep(5 * time.Millisecond)
			}
			if extended {
				if err := held.Extend(ctx, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			_ = holderClient.Close()          // dies without Release; Close waits for its requests in flight
			for _, rc := range cl.Clients() { // its key expires (deleted rather than waited for)
				if err := rc.Del(ctx, name).Err(); err != nil {
					t.Fatal(err)
				}
			}
			undoneAttempt(t, ctx, real[1], name)

			gate = make(chan struct{})
			successorClient := newClient(t, []node.Node{lateAnswerNode{real[0].(Node), gate}, real[1], real[2]},
				redlock.WithOwner("successor"), redlock.WithNodeTimeout(testNodeTimeout))
			l, err := successorClient.TryAcquire(ctx, key, time.Minute)
			close(gate)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			prev, ok := l.TookOver()
			if !ok || prev.Holder != node.ReleaseID(held.Token()) || prev.Fence >= l.Fence() {
				t.Fatalf("TookOver = %+v, %v; want the holder's lock, fence below ours (%d)", prev, ok, l.Fence())
			}
			if extended && prev.Fence < held.Fence() {
				t.Fatalf("TookOver's fence %d, below the extended holder's %d", prev.Fence, held.Fence())
			}
			if !extended && prev.Fence != 101 {
				t.Fatalf("TookOver's fence %d, want node 2's own count 101 (the documented limit)", prev.Fence)
			}
		})
	}
}

// undoneAttempt is another client's attempt that won node nd, and was
// undone there (it lost elsewhere): it replaced the trail, then released it.
func undoneAttempt(t *testing.T, ctx context.Context, nd node.Node, name string) {
	t.Helper()
	const token = "0123456789abcdef0123456789abcdef"
	r, err := nd.Acquire(ctx, node.AcquireArgs{Name: name, Token: token, TTL: time.Minute})
	if err != nil || !r.Acquired {
		t.Fatalf("the other attempt's acquire on the node = %+v, %v", r, err)
	}
	if ok, err := nd.Release(ctx, node.ReleaseArgs{Name: name, Token: token}); err != nil || !ok {
		t.Fatalf("the other attempt's undo = %v, %v", ok, err)
	}
}
