package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// woken reports whether w was made active (without blocking).
func woken(w *waiter) bool {
	select {
	case <-w.wake:
		return true
	default:
		return false
	}
}

func hubClient(t *testing.T) *Client {
	t.Helper()
	c, err := New([]node.Node{memnode.New("m0"), memnode.New("m1"), memnode.New("m2")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The hub's rules for one key: FIFO wakes, one waiter per release however
// many nodes announce it, a retry at once for announcements that arrive
// while the woken waiter tries, and the wake passed on by a woken waiter
// that leaves without the lock.
func TestHubRules(t *testing.T) {
	t.Parallel()
	c := hubClient(t)
	h := &c.notify
	const key = "lock:k"
	ws := make([]*waiter, 3)
	for i := range ws {
		ws[i] = c.notify.joinWaiters(context.Background(), key, time.Second)
		if ws[i] == nil {
			t.Fatal("no waiter: notifications off?")
		}
	}
	// Park in reverse: the queue still follows arrival order. (The memory
	// subscriptions came up on join, before any attempt: nothing was
	// missed, so nobody tries again at once.)
	if h.park(ws[2], h.mark(ws[2], ""), wakeOn{all: true}) || h.park(ws[1], h.mark(ws[1], ""), wakeOn{all: true}) || h.park(ws[0], h.mark(ws[0], ""), wakeOn{all: true}) {
		t.Fatal("parked waiters told to try at once")
	}
	gen := h.gen

	// Three nodes announce one release: one waiter wakes, the first to come.
	for range 3 {
		c.notify.released(gen, key, "r1")
	}
	if !woken(ws[0]) || woken(ws[1]) || woken(ws[2]) {
		t.Fatal("one release did not wake exactly the first waiter")
	}
	// It lost (the release had not reached every node when it tried): the
	// announcements that came meanwhile make it try again at once.
	if !h.park(ws[0], h.mark(ws[0], ""), wakeOn{all: true}) {
		t.Fatal("woken waiter that lost while announcements came in did not retry at once")
	}
	// It lost again, and only then do more nodes announce the release: they
	// wake it again, not the others.
	if h.park(ws[0], h.mark(ws[0], "t0"), wakeOn{all: true}) {
		t.Fatal("retried at once with nothing announced")
	}
	c.notify.released(gen, key, "r1")
	if !woken(ws[0]) || woken(ws[1]) || woken(ws[2]) {
		t.Fatal("a late announcement did not wake the waiter that lost to the release's slow nodes")
	}
	// It got the lock: a late announcement of the same release wakes no one.
	c.notify.leaveWaiters(ws[0], true)
	c.notify.released(gen, key, "r1")
	if woken(ws[1]) || woken(ws[2]) {
		t.Fatal("a duplicate announcement woke another waiter")
	}
	// The release of the lock it got wakes the next; it gives up without
	// the lock: the wake passes on to the last.
	c.notify.released(gen, key, node.ReleaseID("t0"))
	if !woken(ws[1]) || woken(ws[2]) {
		t.Fatal("the second release did not wake the second waiter")
	}
	c.notify.leaveWaiters(ws[1], false)
	if !woken(ws[2]) {
		t.Fatal("a woken waiter that left without the lock did not pass the wake on")
	}
	c.notify.leaveWaiters(ws[2], true)
	if len(h.queues) != 0 || h.waiters != 0 {
		t.Fatalf("hub keeps %d queues, %d waiters after all left", len(h.queues), h.waiters)
	}
	// Subscriptions linger, then stop; a new waiter starts them again.
	if h.subs == nil || h.idle == nil {
		t.Fatal("subscriptions gone at once, or no linger timer")
	}
	h.stopIdle(gen) // as the linger timer would
	if h.subs != nil {
		t.Fatal("subscriptions kept after the linger")
	}
	w := c.notify.joinWaiters(context.Background(), key, time.Second)
	if h.subs == nil {
		t.Fatal("no subscriptions for a new waiter")
	}
	c.notify.leaveWaiters(w, false)
	_ = c.Close()
	if c.notify.joinWaiters(context.Background(), key, time.Second) != nil || h.subs != nil {
		t.Fatal("closed client subscribes again")
	}
}

// With notifications off, nothing is registered and no announcement is
// published by memory nodes.
func TestHubOff(t *testing.T) {
	t.Parallel()
	_, err := New([]node.Node{memnode.New("m0")}, WithReleaseNotifications(false), WithRetry(nil))
	if err == nil {
		t.Fatal("nil retry accepted")
	}
	c, err := New([]node.Node{memnode.New("m0")}, WithReleaseNotifications(false))
	if err != nil {
		t.Fatal(err)
	}
	if c.notify.joinWaiters(context.Background(), "lock:k", time.Second) != nil {
		t.Fatal("waiter registered with notifications off")
	}
	start := time.Now()
	if err := c.notify.waitRelease(t.Context(), nil, seen{}, wakeOn{}, time.Millisecond); err != nil || time.Since(start) < time.Millisecond {
		t.Fatalf("nil waiter: %v after %s, want a plain sleep", err, time.Since(start))
	}
}

// A parked waiter wakes on the release of the holder that beat its attempt,
// not on other releases (another client's undo of a lost attempt); after a
// split, on any release; after an attempt that found no quorum, on none.
// Announcements that came while it tried count the same way.
func TestHubWakesOnlyOnTheHolder(t *testing.T) {
	t.Parallel()
	c := hubClient(t)
	h := &c.notify
	const key = "lock:k"
	w := c.notify.joinWaiters(context.Background(), key, time.Second)
	gen := h.gen
	holder := wakeOn{holder: "h1"}
	if h.park(w, h.mark(w, "a"), holder) {
		t.Fatal("tried at once with nothing announced")
	}
	c.notify.released(gen, key, "undo-of-another")
	if woken(w) {
		t.Fatal("another token's release woke a waiter beaten by h1")
	}
	c.notify.released(gen, key, "h1")
	if !woken(w) {
		t.Fatal("the holder's release did not wake its waiter")
	}
	// Announcements while it tries: only the holder's makes it try again.
	c.notify.released(gen, key, "undo-of-another")
	if h.park(w, h.mark(w, "b"), holder) {
		t.Fatal("tried again at once for another token's release")
	}
	c.notify.released(gen, key, "h1") // wakes it: it is parked
	if !woken(w) {
		t.Fatal("the holder's release did not wake its waiter")
	}
	c.notify.released(gen, key, "h1") // a slow node's announcement while it tries
	if !h.park(w, h.mark(w, "c"), holder) {
		t.Fatal("did not try again for the holder's release announced while it tried")
	}
	// After a split, any release; after no quorum, none.
	c.notify.released(gen, key, "x")
	if !h.park(w, h.mark(w, "d"), wakeOn{all: true}) {
		t.Fatal("after a split, a release announced while it tried did not make it try again")
	}
	if h.park(w, h.mark(w, "e"), wakeOn{}) {
		t.Fatal("tried at once after an attempt that found no quorum")
	}
	c.notify.released(gen, key, "y")
	if woken(w) {
		t.Fatal("a release woke a waiter whose attempt found no quorum")
	}
	c.notify.leaveWaiters(w, false)
}

// A release announced while a subscription was broken went unheard: when
// it is back, the parked waiters of every key look again (one per key),
// whatever they wait for.
func TestHubRestoredSubscriptionWakesWaiters(t *testing.T) {
	t.Parallel()
	c := hubClient(t)
	h := &c.notify
	a := c.notify.joinWaiters(context.Background(), "lock:a", time.Second)
	b := c.notify.joinWaiters(context.Background(), "lock:b", time.Second)
	gen := h.gen
	if h.park(a, h.mark(a, "ta"), wakeOn{holder: "h1"}) || h.park(b, h.mark(b, "tb"), wakeOn{}) {
		t.Fatal("tried at once with nothing announced")
	}
	c.notify.subState(gen, 1, false, errors.New("connection reset"))
	if woken(a) || woken(b) {
		t.Fatal("a break woke a waiter")
	}
	c.notify.subState(gen, 1, true, nil)
	if !woken(a) || !woken(b) {
		t.Fatal("a restored subscription did not wake the parked waiters")
	}
	c.notify.leaveWaiters(a, false)
	c.notify.leaveWaiters(b, false)
}

// Once a client's subscriptions are up, an Acquire of a free key does not
// wait for them again (a regression: every Acquire after the first waited
// a whole node timeout).
func TestAcquireWaitsForSubscriptionsOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := mustNew(t, asNodes(memNodes(3)), WithNodeTimeout(time.Second))
		ctx := context.Background()
		for i := range 3 {
			start := time.Now()
			l, err := c.Acquire(ctx, "k", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 0 {
				t.Fatalf("Acquire %d of a free key took %s", i, d)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.Close()
	})
}
