package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// raiseGatedNode holds every RaiseFence until gate closes, after saying on
// raising that one began: an acquisition's fence settle, caught midway.
type raiseGatedNode struct {
	Node
	raising chan<- struct{}
	gate    <-chan struct{}
}

func (g raiseGatedNode) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	select {
	case g.raising <- struct{}{}:
	default:
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return g.Node.RaiseFence(ctx, name, token, fence, retention)
}

// uninspectableNode fails every Inspect: a node down for the look only.
type uninspectableNode struct{ Node }

func (uninspectableNode) Inspect(context.Context, string) (node.Holding, error) {
	return node.Holding{}, errors.New("down for this look")
}

// Info.Fence against the holder's fence when the nodes' counters drifted
// apart: node 0 counted far more than nodes 1 and 2. The acquisition is
// decided on nodes 0 and 1 (node 2's grant comes late), so its fence is
// node 0's count, and it returns once node 1 was raised to it. A look that
// cannot read node 0 reads less while that raise is in flight, and at
// least the holder's fence once the acquisition has returned.
func TestInspectFenceOnceAcquisitionReturned(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	real := nodesOf(cl)
	raising, raiseGate, lateGate := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	holder := newClient(t, []node.Node{real[0], raiseGatedNode{real[1].(Node), raising, raiseGate}, lateAnswerNode{real[2].(Node), lateGate}},
		redlock.WithNodeTimeout(testNodeTimeout))
	name := holder.KeyName(key)
	for i, count := range []int{1_000_000, 100, 100} {
		if err := cl.Clients()[i].Set(ctx, wire.CounterKey(name), count, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	looker := newClient(t, []node.Node{uninspectableNode{real[0].(Node)}, real[1], real[2]}, redlock.WithNodeTimeout(testNodeTimeout))

	type acquired struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan acquired, 1)
	go func() {
		l, err := holder.TryAcquire(ctx, key, time.Minute)
		done <- acquired{l, err}
	}()
	select {
	case <-raising: // decided on nodes 0 and 1; node 1's raise is held
	case a := <-done:
		t.Fatalf("TryAcquire returned without raising node 1: %v, %v", a.l, a.err)
	}
	for holders(t, cl, name)[2] == "" && ctx.Err() == nil { // node 2 granted too (its answer is held)
		time.Sleep(5 * time.Millisecond)
	}
	racing, err := looker.Inspect(ctx, key)
	close(raiseGate)
	a := <-done
	close(lateGate)
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.l.Release(ctx)
	if a.l.Fence() != 1_000_001 {
		t.Fatalf("holder's fence %d, want node 0's count 1000001", a.l.Fence())
	}
	if err != nil || !racing.Held || racing.Fence >= a.l.Fence() {
		t.Fatalf("look racing the settle = held %v, fence %d, %v; want held, fence below the holder's %d (the documented limit)",
			racing.Held, racing.Fence, err, a.l.Fence())
	}
	after, err := looker.Inspect(ctx, key)
	if err != nil || !after.Held || after.Fence < a.l.Fence() {
		t.Fatalf("look after TryAcquire returned = held %v, fence %d, %v; want held, fence >= the holder's %d",
			after.Held, after.Fence, err, a.l.Fence())
	}
}

// Info.Fence is the largest counter read, not the holder's fence: a node
// that granted the acquisition late, after it was decided without it,
// counted higher than the fence, and every look that reads it reports its
// count.
func TestInspectFenceAboveHoldersWhenCountersDrift(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	real := nodesOf(cl)
	gate := make(chan struct{})
	c := newClient(t, []node.Node{real[0], real[1], lateAnswerNode{real[2].(Node), gate}}, redlock.WithNodeTimeout(testNodeTimeout))
	name := c.KeyName(key)
	for i, count := range []int{100, 100, 1_000_000} {
		if err := cl.Clients()[i].Set(ctx, wire.CounterKey(name), count, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.TryAcquire(ctx, key, time.Minute)
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	for holders(t, cl, name)[2] != l.Token() && ctx.Err() == nil { // node 2's late grant
		time.Sleep(5 * time.Millisecond)
	}
	info, err := c.Inspect(ctx, key)
	if err != nil || !info.Held || l.Fence() != 101 || info.Fence != 1_000_001 {
		t.Fatalf("holder's fence %d; Inspect = held %v, fence %d, %v; want 101 and 1000001", l.Fence(), info.Held, info.Fence, err)
	}
}
