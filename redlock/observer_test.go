package redlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/redlock"
)

// recorder keeps every event it observes.
type recorder struct {
	mu     sync.Mutex
	events []redlock.Event
}

func (r *recorder) Observe(e redlock.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// of returns the events of key (all keys when key is "") of kind, with reason
// when reason is not "*".
func (r *recorder) of(key string, kind redlock.EventKind, reason string) []redlock.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []redlock.Event
	for _, e := range r.events {
		if (key == "" || e.Key == key) && e.Kind == kind && (reason == "*" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) count(key string, kind redlock.EventKind, reason string) int {
	return len(r.of(key, kind, reason))
}

// balanced checks the invariants Event documents for key: calls ended once,
// locks ended once, auto-extension stopped once per start.
func (r *recorder) balanced(t *testing.T, key string, calls int) {
	t.Helper()
	acq, notAcq := r.count(key, redlock.EventAcquired, "*"), r.count(key, redlock.EventNotAcquired, "*")
	first := 0
	for _, e := range r.of(key, redlock.EventAttempt, "*") {
		if e.Attempts == 1 {
			first++
		}
	}
	if first != calls {
		t.Errorf("%s: %d first attempts, want %d calls", key, first, calls)
	}
	if acq+notAcq != calls {
		t.Errorf("%s: %d acquired + %d not acquired, want %d calls", key, acq, notAcq, calls)
	}
	if ended := r.count(key, redlock.EventReleased, "*") + r.count(key, redlock.EventLost, "*"); ended != acq {
		t.Errorf("%s: %d locks ended (released or lost), want %d acquired", key, ended, acq)
	}
	if start, stop := r.count(key, redlock.EventKept, "start"), r.count(key, redlock.EventKept, "stop"); start != stop {
		t.Errorf("%s: kept start %d, stop %d", key, start, stop)
	}
}

func lockName(key string) string { return redlock.DefaultKeyPrefix + "{" + key + "}" }

func TestEventsAcquireRelease(t *testing.T) {
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
	got := rec.of(key, redlock.EventAcquired, "")
	if len(got) != 1 || got[0].Fence != l.Fence() || got[0].Attempts != 1 || got[0].Latency <= 0 || got[0].Context != ctx {
		t.Errorf("EventAcquired %+v, want one with fence %d, 1 attempt, a latency and the caller's context", got, l.Fence())
	}
	if n := rec.count(key, redlock.EventReleased, ""); n != 1 {
		t.Errorf("%d EventReleased, want 1", n)
	}
	for _, op := range []string{"acquire", "release"} {
		var nodes []string
		for _, e := range rec.of(key, redlock.EventNode, "") {
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
	if n := rec.count(key, redlock.EventContended, "contended"); n != 1 {
		t.Errorf("%d EventContended \"contended\", want 1", n)
	}
	if n := rec.count(key, redlock.EventNotAcquired, "contended"); n != 1 {
		t.Errorf("%d EventNotAcquired \"contended\", want 1", n)
	}

	// A waiter whose context ends is "canceled", not "contended".
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := c.Acquire(wctx, key, 3*time.Second); done <- err }()
	await(t, "the waiter's first lost attempt", time.Minute, func() bool { return rec.count(key, redlock.EventContended, "*") >= 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Acquire: %v", err)
	}
	if n := rec.count(key, redlock.EventNotAcquired, "canceled"); n != 1 {
		t.Errorf("%d EventNotAcquired \"canceled\", want 1", n)
	}

	<-held.Done()
	if err := held.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Release after expiry: %v", err)
	}
	if n := rec.count(key, redlock.EventLost, "expired"); n != 1 {
		t.Errorf("%d EventLost \"expired\", want 1", n)
	}
	rec.balanced(t, key, 3)
}

func TestEventsLostNotOurs(t *testing.T) {
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
	if got := rec.of(key, redlock.EventLost, "not_ours"); len(got) != 1 || !errors.Is(got[0].Err, redlock.ErrLockLost) {
		t.Errorf("EventLost \"not_ours\": %+v, want one wrapping ErrLockLost", got)
	}
	rec.balanced(t, key, 1)
}

func TestEventsSplitVote(t *testing.T) {
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
	if n := rec.count(key, redlock.EventContended, "split_vote"); n < 2 {
		t.Errorf("%d EventContended \"split_vote\", want the rounds of the split (at least 2)", n)
	}
	if n := rec.count(key, redlock.EventNotAcquired, "split_vote"); n != 1 {
		t.Errorf("%d EventNotAcquired \"split_vote\", want 1", n)
	}
	rec.balanced(t, key, 1)
}

func TestEventsKept(t *testing.T) {
	rec := &recorder{}
	_, c := start(t, 3, redlock.WithObserver(rec))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.Acquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stop := l.KeepAlive()
	if n := rec.count(key, redlock.EventKept, "start"); n != 1 {
		t.Fatalf("%d kept starts, want 1", n)
	}
	await(t, "an extension by the watchdog", time.Minute, func() bool { return rec.count(key, redlock.EventExtended, "") > 0 })
	stop()
	stop()
	if n := rec.count(key, redlock.EventKept, "stop"); n != 1 {
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
	await(t, "the loss event", time.Minute, func() bool { return len(rec.of(key, redlock.EventLost, "*")) > 0 })
	if got := rec.of(key, redlock.EventLost, "*"); len(got) != 1 || got[0].Reason != "extension_failed" {
		t.Errorf("EventLost %+v, want one \"extension_failed\"", got)
	}
	if got := rec.of(key, redlock.EventExtended, "quorum_unreachable"); len(got) == 0 || !errors.Is(got[0].Err, redlock.ErrQuorumUnreachable) {
		t.Errorf("failed extensions %+v, want EventExtended with Err wrapping ErrQuorumUnreachable", got)
	}
	_ = l.Release(context.Background())
	if _, err := c.TryAcquire(ctx, key, 3*time.Second); !errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("TryAcquire with 2 of 3 nodes down: %v", err)
	}
	if n := rec.count(key, redlock.EventNotAcquired, "quorum_unreachable"); n != 1 {
		t.Errorf("%d EventNotAcquired \"quorum_unreachable\", want 1", n)
	}
	failed := 0
	for _, e := range rec.of(key, redlock.EventNode, "") {
		if e.Err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Error("no EventNode with an error from the dead nodes")
	}
	rec.balanced(t, key, 2)
	for _, n := range cl.Nodes()[:2] { // so that go-redis stops redialing (goleak)
		if err := n.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// An acquisition that takes over from a holder that let its lock expire
// says so in its EventAcquired (Reason "took_over"), as TookOver does; one
// after a release does not.
func TestEventsTakeover(t *testing.T) {
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
	if got := rec.of(key, redlock.EventAcquired, "*"); len(got) != 1 || got[0].Reason != "took_over" {
		t.Errorf("EventAcquired %+v, want one with Reason took_over", got)
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
	if n := rec.count(key, redlock.EventAcquired, "took_over"); n != 1 {
		t.Errorf("%d took_over events after a release and a new acquisition, want still 1", n)
	}
	if n := rec.count(key, redlock.EventAcquired, ""); n != 1 {
		t.Errorf("%d plain EventAcquired, want 1", n)
	}
}
