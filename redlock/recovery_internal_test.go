package redlock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// With two of five nodes dead (down, and answering each request with an
// error only after a client-side retry backoff, as go-redis does with a
// refused connection), an acquisition of a key used before is decided by
// the three live nodes at once, while the key is younger than the recovery
// period: the young-key linger does not wait for nodes already known to be
// failing when the yes votes show no data loss. Before, every such
// acquisition waited the linger out (2 ms at least), which halved the
// throughput of a contended key with exactly a quorum of nodes up. A key
// new to every yes node still waits the linger: nothing shows that those
// nodes did not lose it.
func TestExactQuorumYoungKeyDoesNotWaitForDeadNodes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		nodes := asNodes(ms)
		for _, i := range []int{3, 4} {
			ms[i].SetDown(true, false)
			nodes[i] = late{Node: ms[i], delay: 20 * time.Millisecond}
		}
		c := mustNew(t, nodes, WithNodeTimeout(time.Second)) // recovery on: the default period
		defer c.Close()
		ctx := context.Background()
		cycle := func(key string) time.Duration {
			start := time.Now()
			l, err := c.TryAcquire(ctx, key, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			return took
		}
		cycle("k")              // its first use: the markers; nodes 3 and 4 learnt to fail
		time.Sleep(time.Second) // every request to the dead nodes answered
		for range 3 {
			if d := cycle("k"); d != 0 {
				t.Errorf("acquiring a key used before with nodes 3 and 4 known dead waited %s for them", d)
			}
		}
		if d := cycle("new"); d == 0 {
			t.Errorf("a key new to every yes node was acquired without the linger")
		}
	})
}

// flaky fails acquires and releases while fail is set (the client is cut
// off from it), else answers acquires after a moment.
type flaky struct {
	node.Node
	fail *atomic.Bool
}

func (f flaky) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	if f.fail.Load() {
		return false, errors.New("unreachable")
	}
	return f.Node.Release(ctx, a)
}

func (f flaky) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if f.fail.Load() {
		return node.AcquireReply{}, errors.New("unreachable")
	}
	time.Sleep(500 * time.Microsecond)
	return f.Node.Acquire(ctx, a)
}

// A failing mark can be stale: the client's own partition just ended. A
// holder has the key on nodes 0 and 2 (node 1 was down, so its marker
// went untouched for longer than the recovery period); node 0 then
// restarts empty. The next acquisition's yes votes are node 0 (a marker it
// writes itself) and node 1 (an old, untouched one): they show a possible
// loss, so it hears node 2, marked failing by its client, within the
// linger, and node 0 sits out instead of granting the lock twice.
func TestYoungKeyLingerHearsStaleFailingNodeAfterDataLoss(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(3)
		const ttl = time.Second
		holder := mustNew(t, asNodes(ms), WithNodeTimeout(100*time.Millisecond), WithRecoveryPeriod(ttl))
		defer holder.Close()
		var cut atomic.Bool
		mine := asNodes(ms)
		mine[2] = flaky{Node: ms[2], fail: &cut}
		c := mustNew(t, mine, WithNodeTimeout(100*time.Millisecond), WithRecoveryPeriod(ttl))
		defer c.Close()
		ctx := context.Background()

		l, err := holder.TryAcquire(ctx, "k", ttl) // markers on all three
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
		ms[1].SetDown(true, false)
		time.Sleep(2 * ttl) // node 1's marker: untouched for longer than the period
		held, err := holder.TryAcquire(ctx, "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release(ctx)

		cut.Store(true) // c's requests to node 2 fail: c marks it failing
		if l, err := c.TryAcquire(ctx, "other", ttl); err == nil {
			t.Fatalf("acquired %q on node 0 alone", l.Key())
		}
		ms[0].SetDown(true, true) // restarts empty
		ms[0].SetDown(false, false)
		ms[1].SetDown(false, false)
		cut.Store(false)

		if !c.health.failing(2) {
			t.Fatal("node 2 is not marked failing: the test would prove nothing")
		}
		if l, err := c.TryAcquire(ctx, "k", ttl); err == nil {
			t.Errorf("acquired %q (fence %d) while the holder keeps it on node 2: node 0 lost its data and node 2, marked failing, was not heard", "k", l.Fence())
		}
	})
}

// mute never answers an acquire: it waits out the request's deadline.
type mute struct{ Node }

func (m mute) Acquire(ctx context.Context, _ node.AcquireArgs) (node.AcquireReply, error) {
	<-ctx.Done()
	return node.AcquireReply{}, ctx.Err()
}

// cutOff fails every acquire, extension and release: one client's link to
// a node that the other clients reach.
type cutOff struct{ Node }

var errCutOff = errors.New("cut off")

func (cutOff) Acquire(context.Context, node.AcquireArgs) (node.AcquireReply, error) {
	return node.AcquireReply{}, errCutOff
}

func (cutOff) Extend(context.Context, []node.ExtendArgs) ([]node.ExtendResult, error) {
	return nil, errCutOff
}

func (cutOff) Release(context.Context, node.ReleaseArgs) (bool, error) { return false, errCutOff }

// A holder has the key on nodes 0 and 2 (node 1 was cut off from it, so
// its marker went untouched for longer than the recovery period); node 0
// then restarts empty. The next acquisition's yes votes are node 0 (a
// marker it writes itself) and node 1 (the old, untouched one). That
// picture is an idle key whose markers expired apart, or a loss whose
// keeper has not answered yet: the acquisition hears every node before it
// counts node 0, however much slower the keeper is than the others, and
// when a node stays silent node 0 does not count.
func TestYoungMarkerBesideAnIdleOneHearsEveryNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		keeper func(Node) Node
	}{
		{"keeper answers late", func(n Node) Node { return late{Node: n, delay: 30 * time.Millisecond} }},
		{"keeper silent", func(n Node) Node { return mute{Node: n} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms := memNodes(3)
				const ttl = time.Second
				opts := []Option{WithNodeTimeout(100 * time.Millisecond), WithRecoveryPeriod(ttl)}
				first := mustNew(t, asNodes(ms), opts...)
				defer first.Close()
				ctx := context.Background()
				l, err := first.TryAcquire(ctx, "k", ttl) // markers on all three
				if err != nil {
					t.Fatal(err)
				}
				_ = l.Release(ctx)
				time.Sleep(2 * ttl) // every marker: untouched for longer than the period

				theirs := asNodes(ms)
				theirs[1] = cutOff{Node: ms[1]}
				holder := mustNew(t, theirs, opts...)
				defer holder.Close()
				held, err := holder.TryAcquire(ctx, "k", ttl)
				if err != nil {
					t.Fatal(err)
				}
				defer held.Release(ctx)
				ms[0].SetDown(true, true) // restarts empty
				ms[0].SetDown(false, false)

				mine := asNodes(ms)
				mine[2] = tc.keeper(ms[2])
				c := mustNew(t, mine, opts...)
				defer c.Close()
				l, err = c.TryAcquire(ctx, "k", ttl)
				if err == nil {
					t.Fatalf("acquired %q (fence %d) while the holder keeps it on node 2: node 0 lost its data", "k", l.Fence())
				}
				if !errors.Is(err, ErrNotAcquired) {
					t.Errorf("err = %v, want ErrNotAcquired", err)
				}
			})
		})
	}
}

// lateNode answers acquires after a delay, within the node timeout.
type lateNode struct {
	Node
	delay time.Duration
}

func (l lateNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	time.Sleep(l.delay)
	return l.Node.Acquire(ctx, a)
}

// Four of five nodes lost their data; the one that kept the key answers
// last, a little after the others. The four young markers look like a new
// key: the round gives the other nodes a moment, hears the late node, and
// its old marker makes the four sit out.
func TestFreshKeyWaitsAMomentForTheOtherNodes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		nodes := asNodes(ms)
		nodes[4] = lateNode{Node: ms[4], delay: time.Millisecond}
		ctx := context.Background()
		holder := mustNew(t, nodes, WithNodeTimeout(time.Second))
		defer holder.Close()
		l, err := holder.TryAcquire(ctx, "k", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the markers age past the slack
		for _, m := range ms[:4] {
			m.SetDown(true, true)
			m.SetDown(false, false)
		}
		other := mustNew(t, nodes, WithNodeTimeout(time.Second))
		defer other.Close()
		_, err = other.TryAcquire(ctx, "k", 10*time.Second)
		var ne *NodeError
		if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, ErrRecovering) || !errors.As(err, &ne) {
			t.Fatalf("competitor after four nodes lost the held key: %v, want ErrNotAcquired naming a recovering node", err)
		}
		_ = l.Release(ctx)
	})
}
