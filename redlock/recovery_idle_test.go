package redlock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// writeMarker sets the marker of name on n as a node writes it, "since
// creator touched", with since and touched that long ago by n's clock.
func writeMarker(t *testing.T, n *redistest.Node, name string, age, touchedAgo time.Duration) {
	t.Helper()
	ctx := ctxFor(t)
	now, err := n.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	v := fmt.Sprintf("%d 1 %d", now.Add(-age).UnixMicro(), now.Add(-touchedAgo).UnixMicro())
	if err := n.Client().Set(ctx, wire.MarkerKey(name), v, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
}

// The markers of an idle key expire a few milliseconds apart on different
// nodes: an acquisition between finds new markers on some nodes and an old
// one, untouched for longer than the recovery period, on another. No lock
// can be held (every lock touches the markers within its TTL), so the nodes
// with new markers count. A marker touched within the period still sits
// them out: a lock may hold the key there.
func TestIdleKeyMarkersExpiringApartDoNotSitOut(t *testing.T) {
	t.Parallel()
	const period = time.Minute
	cl := redistest.StartT(t, 3)
	log := &recoveringLog{}
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period),
		redlock.WithObserver(log))
	ctx := ctxFor(t)
	nodes := cl.Nodes()

	idle := uniqueKey(t)
	writeMarker(t, nodes[2], "lock:{"+idle+"}", time.Hour, 2*period)
	l, err := c.TryAcquire(ctx, idle, 30*time.Second)
	if err != nil {
		t.Fatalf("acquire of an idle key whose markers expired apart: %v", err)
	}
	_ = l.Release(ctx)
	for _, n := range nodes {
		if got, _ := log.of(n.Addr()); got != 0 {
			t.Fatalf("%v reported recovering %d time(s) for an idle key", n, got)
		}
	}

	touched := uniqueKey(t)
	writeMarker(t, nodes[2], "lock:{"+touched+"}", time.Hour, period/2)
	if _, err := c.TryAcquire(ctx, touched, 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("acquire against a marker touched within the period: %v, want ErrNotAcquired", err)
	}
	for _, n := range nodes[:2] {
		if got, _ := log.of(n.Addr()); got == 0 {
			t.Errorf("%v has a new marker beside one touched within the period, but was not reported recovering", n)
		}
	}
}

// A node that lost a held key, beside an idle marker on another node,
// looks like an idle key whose markers expired apart until the node that
// kept the key answers. On 3 real nodes, with a key used long ago: a
// holder has it on nodes 0 and 2, node 1's marker stays untouched for
// twice the period, and node 0 is flushed. A competitor whose node 2 answers far later than the
// others is refused: it hears node 2 before it counts node 0.
func TestLostKeyBesideIdleMarkerHearsSlowKeeper(t *testing.T) {
	t.Parallel()
	const period = time.Minute
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period)}
	for _, n := range cl.Nodes() { // a key used long ago, idle since
		writeMarker(t, n, "lock:{"+key+"}", time.Hour, 2*period)
	}
	all := nodesOf(cl)
	holder := newClient(t, []node.Node{all[0], all[2]}, opts...)
	held, err := holder.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[0].FlushAll(ctx); err != nil {
		t.Fatal(err)
	}

	mine := nodesOf(cl)
	mine[2] = slowNode{Node: mine[2].(Node), delay: 300 * time.Millisecond}
	c := newClient(t, mine, opts...)
	if l, err := c.TryAcquire(ctx, key, 30*time.Second); err == nil {
		t.Fatalf("acquired (fence %d) while the holder keeps the key on node 2 (holder's fence %d)", l.Fence(), held.Fence())
	} else if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
}
