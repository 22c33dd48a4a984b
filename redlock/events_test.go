package redlock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

func TestEventsAcquireRelease(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	cl := startCluster(t, 3)
	c, err := redlock.New(nodesOf(cl), redlock.WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.Acquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil { // node events of stragglers are in after Close
		t.Fatal(err)
	}
	got := rec.of(key, observe.Acquired, "")
	if len(got) != 1 || got[0].Fence != l.Fence() || got[0].Attempts != 1 || got[0].Latency <= 0 || got[0].Context != ctx {
		t.Errorf("observe.Acquired %+v, want one with fence %d, 1 attempt, a latency and the caller's context", got, l.Fence())
	}
	if n := rec.count(key, observe.Released, ""); n != 1 {
		t.Errorf("%d observe.Released, want 1", n)
	}
	for _, op := range []string{"acquire", "release"} {
		var nodes []string
		for _, e := range rec.of(key, observe.Node, "") {
			if e.Op == op {
				if e.Err != nil || e.Latency <= 0 || e.Node == "" {
					t.Errorf("node event %+v: want a node, a latency and no error", e)
				}
				nodes = append(nodes, e.Node)
			}
		}
		slices.Sort(nodes)
		if len(slices.Compact(nodes)) != 3 {
			t.Errorf("%s: node events from %v, want each of the 3 nodes once", op, nodes)
		}
	}
	rec.balanced(t, key, 1)
}

func TestEventsContendedCanceledExpired(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	_, c := start(t, 3, redlock.WithObserver(rec))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	held, err := c.Acquire(ctx, key, 3*time.Second) // ends by its expiry: no keep-alive, no release
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, key, 3*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire on a held key: %v", err)
	}
	if n := rec.count(key, observe.Contended, "contended"); n != 1 {
		t.Errorf("%d observe.Contended \"contended\", want 1", n)
	}
	if n := rec.count(key, observe.NotAcquired, "contended"); n != 1 {
		t.Errorf("%d observe.NotAcquired \"contended\", want 1", n)
	}

	// A waiter whose context ends is "canceled", not "contended".
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := c.Acquire(wctx, key, 3*time.Second); done <- err }()
	await(t, "the waiter's first lost attempt", time.Minute, func() bool { return rec.count(key, observe.Contended, "*") >= 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Acquire: %v", err)
	}
	if n := rec.count(key, observe.NotAcquired, "canceled"); n != 1 {
		t.Errorf("%d observe.NotAcquired \"canceled\", want 1", n)
	}

	<-held.Done()
	if err := held.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Release after expiry: %v", err)
	}
	if n := rec.count(key, observe.Lost, "expired"); n != 1 {
		t.Errorf("%d observe.Lost \"expired\", want 1", n)
	}
	rec.balanced(t, key, 3)
}

func TestEventsLostNotOurs(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	cl, c := start(t, 3, redlock.WithObserver(rec))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	setOn(t, cl, lockName(key), "someone-else", 10*time.Second, 0, 1)
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend with the key another's on 2 of 3 nodes: %v", err)
	}
	if got := rec.of(key, observe.Lost, "not_ours"); len(got) != 1 || !errors.Is(got[0].Err, redlock.ErrLockLost) {
		t.Errorf("observe.Lost \"not_ours\": %+v, want one wrapping ErrLockLost", got)
	}
	rec.balanced(t, key, 1)
}

func TestEventsSplitVote(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	cl, c := start(t, 5, redlock.WithObserver(rec))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	// Two other tokens on 2 nodes each: no one can reach 3 of 5, and we
	// (one node) lose every split round.
	setOn(t, cl, lockName(key), "aaaa", 30*time.Second, 0, 1)
	setOn(t, cl, lockName(key), "bbbb", 30*time.Second, 2, 3)
	if _, err := c.TryAcquire(ctx, key, 3*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire in a forced split: %v", err)
	}
	if n := rec.count(key, observe.Contended, "split_vote"); n < 2 {
		t.Errorf("%d observe.Contended \"split_vote\", want the rounds of the split (at least 2)", n)
	}
	if n := rec.count(key, observe.NotAcquired, "split_vote"); n != 1 {
		t.Errorf("%d observe.NotAcquired \"split_vote\", want 1", n)
	}
	rec.balanced(t, key, 1)
}

func TestEventsKept(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	_, c := start(t, 3, redlock.WithObserver(rec))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.Acquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stop := l.KeepAlive()
	if n := rec.count(key, observe.Kept, "start"); n != 1 {
		t.Fatalf("%d kept starts, want 1", n)
	}
	await(t, "an extension by the watchdog", time.Minute, func() bool { return rec.count(key, observe.Extended, "") > 0 })
	stop()
	stop()
	if n := rec.count(key, observe.Kept, "stop"); n != 1 {
		t.Errorf("%d kept stops after stop() twice, want 1", n)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, key, 3*time.Second, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	rec.balanced(t, key, 2)
}

// Nodes die under a kept lock: failed extensions, then the watchdog's loss.
func TestEventsWatchdogLoss(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	cl, c := start(t, 3, redlock.WithObserver(rec), redlock.WithKeepAlive(extend.WithRetryInterval(20*time.Millisecond)))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.Acquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.KeepAlive()
	for _, n := range cl.Nodes()[:2] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	<-l.Done()
	// Done closes before the event reaches the observer.
	await(t, "the loss event", time.Minute, func() bool { return len(rec.of(key, observe.Lost, "*")) > 0 })
	if got := rec.of(key, observe.Lost, "*"); len(got) != 1 || got[0].Reason != "extension_failed" {
		t.Errorf("observe.Lost %+v, want one \"extension_failed\"", got)
	}
	if got := rec.of(key, observe.Extended, "quorum_unreachable"); len(got) == 0 || !errors.Is(got[0].Err, redlock.ErrQuorumUnreachable) {
		t.Errorf("failed extensions %+v, want observe.Extended with Err wrapping ErrQuorumUnreachable", got)
	}
	_ = l.Release(context.Background())
	if _, err := c.TryAcquire(ctx, key, 3*time.Second); !errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("TryAcquire with 2 of 3 nodes down: %v", err)
	}
	if n := rec.count(key, observe.NotAcquired, "quorum_unreachable"); n != 1 {
		t.Errorf("%d observe.NotAcquired \"quorum_unreachable\", want 1", n)
	}
	failed := 0
	for _, e := range rec.of(key, observe.Node, "") {
		if e.Err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Error("no observe.Node with an error from the dead nodes")
	}
	rec.balanced(t, key, 2)
	for _, n := range cl.Nodes()[:2] { // so that go-redis stops redialing (goleak)
		if err := n.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// An acquisition that takes over from a holder that let its lock expire
// says so in its observe.Acquired (Reason "took_over"), as TookOver does; one
// after a release does not.
func TestEventsTakeover(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	crashed, err := redlock.New(nodesOf(cl), redlock.WithOwner("worker-1"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = crashed.TryAcquire(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = crashed.Close() // no release: the lock expires
	// Each node's trail must be taken over by the next lock: a node where
	// the old key outlived the next acquisition (it landed late there) keeps
	// the old trail, and the acquisition after would report the same
	// takeover again (a documented limit of TookOver).
	// (Close waited for the old acquisition's last request; the old key may
	// already have expired on a loaded machine, TTL 1 s.)
	c := newClient(t, nodesOf(cl), redlock.WithObserver(rec), patient)
	eventuallyFree(t, cl, c.KeyName(key))
	l, err := c.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(key), l.Token())
	if _, ok := l.TookOver(); !ok {
		t.Fatal("TookOver false after the holder's client closed without release")
	}
	if got := rec.of(key, observe.Acquired, "*"); len(got) != 1 || got[0].Reason != "took_over" {
		t.Errorf("observe.Acquired %+v, want one with Reason took_over", got)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Release returns at a majority; a node whose release is still on its
	// way keeps the trail, which the next acquisition would report as a
	// takeover (a documented limit). Close waits for it.
	_ = c.Close()
	l, err = c.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rec.count(key, observe.Acquired, "took_over"); n != 1 {
		t.Errorf("%d took_over events after a release and a new acquisition, want still 1", n)
	}
	if n := rec.count(key, observe.Acquired, ""); n != 1 {
		t.Errorf("%d plain observe.Acquired, want 1", n)
	}
}
