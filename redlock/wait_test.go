package redlock_test

// Waiting on real redis-server nodes: a release during an attempt wakes the
// waiter, and a first wait makes as many attempts as the policy allows.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// A release that lands while a waiter's attempt is in flight
// (after a node said "held", before the waiter parks) wakes the waiter: it
// does not sleep its retry delay (v1: 2.0 s instead of 51 ms). The
// subscriptions are warm, as in a busy service.
func TestReleaseDuringAttemptIsNotMissed(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	holder := newClient(t, nodesOf(cl))
	const delay = 30 * time.Second
	key := uniqueKey(t)
	p := &pauser{name: holder.KeyName(key), seen: make(chan struct{}, 3), gate: make(chan struct{})}
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, pausingNode{Node: n.(Node), p: p})
	}
	var contended atomic.Int32
	// The gate holds the attempt's replies until the release is announced:
	// a node timeout of 10 s keeps a loaded machine from turning them into
	// failures (an attempt whose nodes all failed names no holder, and then
	// no release wakes the waiter).
	waiter := newClient(t, nodes, redlock.WithRetry(retry.Constant(3, delay, 0)), redlock.WithNodeTimeout(10*time.Second),
		redlock.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Contended {
				contended.Add(1)
			}
		})))

	// Warm the waiter's subscriptions with a wait on another key. The holder
	// only tries (it never subscribes), so that a subscriber on every node
	// is the waiter: a release is announced only by the nodes where the
	// waiter's attempt marked the key, and it must hear each of them.
	other, err := holder.TryAcquire(ctx, uniqueKey(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	warm := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, other.Key(), time.Minute)
		if err == nil {
			err = l.Release(ctx)
		}
		warm <- err
	}()
	await(t, "the warming waiter's first lost attempt", time.Minute, func() bool { return contended.Load() > 0 })
	await(t, "the waiter's subscription on every node", time.Minute, func() bool {
		for _, rc := range cl.Clients() {
			if n := rc.PubSubNumSub(ctx, holder.ReleaseChannel()).Val()[holder.ReleaseChannel()]; n < 1 {
				return false
			}
		}
		return true
	})

	l, err := holder.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		wl, err := waiter.Acquire(ctx, key, time.Minute)
		if err == nil {
			err = wl.Release(ctx)
		}
		got <- err
	}()
	<-p.seen // the waiter's attempt met the holder on a node
	announced := listen(t, cl, holder.ReleaseChannel())
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-announced
	released := time.Now()
	close(p.gate) // now the attempt comes back "held"
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("acquired %s after the release", time.Since(released))
	case <-time.After(delay / 2):
		t.Fatalf("the waiter slept through a release that landed during its attempt")
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-warm; err != nil {
		t.Fatal(err)
	}
}

// pausingNode holds back the "held" answers to acquires of p.name until
// p.gate is closed, and says so on p.seen.
type pausingNode struct {
	Node
	p *pauser
}

type pauser struct {
	name string
	seen chan struct{}
	gate chan struct{}
}

func (n pausingNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := n.Node.Acquire(ctx, a)
	if err == nil && !r.Acquired && a.Name == n.p.name {
		select {
		case n.p.seen <- struct{}{}:
		default:
		}
		<-n.p.gate
	}
	return r, err
}

// listen subscribes to channel on node 0 and returns a channel that gets
// the first message.
func listen(t *testing.T, cl *redistest.Cluster, channel string) <-chan struct{} {
	t.Helper()
	ps := cl.Clients()[0].Subscribe(ctxFor(t), channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctxFor(t)); err != nil { // the confirmation
		t.Fatal(err)
	}
	out := make(chan struct{})
	go func() {
		if _, err := ps.ReceiveMessage(ctxFor(t)); err == nil {
			close(out)
		}
	}()
	return out
}

// A first wait makes exactly as many attempts as the policy
// allows, 1 + retries (v1: one more, when the subscription came up).
func TestFirstWaitAttemptsMatchPolicy(t *testing.T) {
	t.Parallel()
	cl, holder := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	if _, err := holder.Acquire(ctx, key, time.Minute); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	c := newClient(t, nodesOf(cl), redlock.WithRetry(retry.Constant(3, 100*time.Millisecond, 0)),
		redlock.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Attempt {
				attempts.Add(1)
			}
		})))
	if _, err := c.Acquire(ctx, key, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	if n := attempts.Load(); n != 4 {
		t.Fatalf("%d attempts, want 1 + 3 retries", n)
	}
}
