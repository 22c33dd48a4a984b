package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// acquiredAttempts is an observer that counts contended attempts (as
// eventCounter does) and keeps the attempts of each acquisition.
type acquiredAttempts struct {
	eventCounter
	mu       sync.Mutex
	attempts []int
}

func (a *acquiredAttempts) Observe(ev observe.Event) {
	a.eventCounter.Observe(ev)
	if ev.Kind == observe.Acquired {
		a.mu.Lock()
		a.attempts = append(a.attempts, ev.Attempts)
		a.mu.Unlock()
	}
}

func (a *acquiredAttempts) last() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[len(a.attempts)-1]
}

// patientClient is a client over nodes whose retry delay is far longer
// than a test: its waiters get a lock in time only when handed it or
// woken.
func patientClient(t *testing.T, nodes []node.Node, obs *acquiredAttempts) *redlock.Client {
	return newClient(t, nodes, redlock.WithRetry(retry.Constant(5, wokenDelay, 0)), redlock.WithObserver(obs))
}

// parkedWaiter starts Acquire of key on c under ctx and returns once it
// lost its first attempt and is parked: only a parked waiter is handed the
// lock (one between its lost attempt and its wait is woken instead).
func parkedWaiter(t *testing.T, ctx context.Context, c *redlock.Client, obs *acquiredAttempts, key string) <-chan acquireResult {
	t.Helper()
	done := blockedWaiterCtx(t, ctx, c, &obs.eventCounter, key, time.Minute)
	await(t, "the waiter to park", time.Minute, func() bool { return c.Parked(key) == 1 })
	return done
}

// A Release hands the lock to a waiter of its own client in the same round:
// the waiter gets it without an attempt of its own after its first lost
// one, under a larger fence and with no previous holder, and the holder's
// release succeeds. Its retry delay is far longer than the test: only the
// hand-over (or a wake) can give it the lock in time.
func TestReleaseHandsOverToAWaiterOfItsClient(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	obs := &acquiredAttempts{}
	c := patientClient(t, nodesOf(cl), obs)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	held := holdEverywhere(t, c, key, cl)
	done := parkedWaiter(t, ctx, c, obs, key)
	if err := held.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	defer func() { _ = r.lock.Release(ctx) }()
	if n := obs.last(); n != 1 {
		t.Errorf("the waiter acquired after %d attempts of its own, want 1 (its first, lost): not handed over", n)
	}
	if r.lock.Fence() <= held.Fence() {
		t.Errorf("handed-over fence %d is not above the holder's %d", r.lock.Fence(), held.Fence())
	}
	if _, took := r.lock.TookOver(); took {
		t.Error("a handed-over lock reports a previous holder")
	}
	if err := held.Release(ctx); err == nil {
		t.Error("a second release of the handing lock succeeded")
	}
	if err := r.lock.Extend(ctx, time.Minute); err != nil {
		t.Errorf("extend of the handed-over lock: %v", err)
	}
}

// A key changes hands inside one client at most MaxHandOvers times in a
// row: the lock that ends the run is released even with a waiter of its
// client parked, and its release wakes the other client's waiter, which
// saw the first holder of the run hold the key (every token of the run is
// announced).
func TestHandedOverLockIsReleasedToEveryClient(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	obs, other := &acquiredAttempts{}, &acquiredAttempts{}
	c := patientClient(t, nodesOf(cl), obs)
	d := patientClient(t, nodesOf(cl), other)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	held := holdEverywhere(t, c, key, cl)
	theirs := blockedWaiterCtx(t, ctx, d, &other.eventCounter, key, time.Minute)
	for i := range redlock.MaxHandOvers {
		next := parkedWaiter(t, ctx, c, obs, key)
		if err := held.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		r := <-next
		if r.err != nil {
			t.Fatalf("waiter %d: %v", i, r.err)
		}
		if n := obs.last(); n != 1 {
			t.Fatalf("waiter %d made %d attempts, want 1: not handed over", i, n)
		}
		held = r.lock
	}
	last := parkedWaiter(t, ctx, c, obs, key)
	if err := held.Release(ctx); err != nil {
		t.Fatalf("release of the run's last lock: %v", err)
	}
	// Both woken by the announcement; whoever wins releases to the other.
	var got []acquireResult
	for range 2 {
		select {
		case r := <-theirs:
			got = append(got, r)
			theirs = nil
		case r := <-last:
			got = append(got, r)
			last = nil
		case <-ctx.Done():
			t.Fatalf("a waiter was never woken (%d of 2 acquired): the run's first token's release was not announced", len(got))
		}
		r := got[len(got)-1]
		if r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
		if err := r.lock.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if n := other.last(); n < 2 {
		t.Errorf("the other client's waiter made %d attempts, want at least 2 (woken, not handed over)", n)
	}
	if n := obs.last(); n < 2 {
		t.Errorf("this client's last waiter made %d attempts, want at least 2: handed over past the run's end", n)
	}
}

// A waiter that left (its context ended) is not handed the lock: the
// release is an ordinary one, and the key is free after it.
func TestReleaseHandsNothingToAWaiterThatLeft(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	obs := &acquiredAttempts{}
	c := patientClient(t, nodesOf(cl), obs)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	held := holdEverywhere(t, c, key, cl)
	wctx, cancel := context.WithCancel(ctx)
	done := parkedWaiter(t, wctx, c, obs, key)
	cancel()
	if r := <-done; r.err == nil {
		t.Fatal("a cancelled waiter acquired")
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	l, err := c.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatalf("the key is not free after the release: %v", err)
	}
	_ = l.Release(ctx)
}

// leavingWaiterNode is a real node that cancels the waiter's context as
// soon as it has granted a hand-over: the waiter leaves while the round
// that took the key for it is deciding.
type leavingWaiterNode struct {
	*redisnode.Node
	leave func()
}

func (n leavingWaiterNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := n.Node.Acquire(ctx, a)
	if a.From != "" {
		n.leave()
	}
	return r, err
}

// A waiter that leaves while the round that takes the key for it runs is
// handed nothing, and the holder's release still succeeds and frees the key:
// the nodes the round took count as released, and what it took is let go.
func TestReleaseSucceedsWhenTheWaiterLeavesDuringTheHandOver(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	wctx, leave := context.WithCancel(ctx)
	defer leave()
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, leavingWaiterNode{Node: redisnode.New(rc), leave: leave})
	}
	obs := &acquiredAttempts{}
	c := patientClient(t, nodes, obs)
	other := newClient(t, nodesOf(cl))
	key := uniqueKey(t)
	held := holdEverywhere(t, c, key, cl)
	done := parkedWaiter(t, wctx, c, obs, key)
	if err := held.Release(ctx); err != nil {
		t.Fatalf("release while the waiter left: %v, want nil", err)
	}
	if r := <-done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the waiter that left got %v, want its context's error", r.err)
	}
	await(t, "the key to be free", time.Minute, func() bool {
		l, err := other.TryAcquire(ctx, key, time.Minute)
		if err != nil {
			return false
		}
		_ = l.Release(ctx)
		return true
	})
}
