package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
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
	c, err := New([]node.Node{node.NewMemory("m0"), node.NewMemory("m1"), node.NewMemory("m2")})
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
	c := hubClient(t)
	h := &c.notify
	const key = "lock:k"
	ws := make([]*waiter, 3)
	for i := range ws {
		ws[i] = c.joinWaiters(context.Background(), key, time.Second)
		if ws[i] == nil {
			t.Fatal("no waiter: notifications off?")
		}
	}
	// Park in reverse: the queue still follows arrival order. (The memory
	// subscriptions came up on join, before any attempt: nothing was
	// missed, so nobody tries again at once.)
	if h.park(ws[2], h.mark(ws[2], "")) || h.park(ws[1], h.mark(ws[1], "")) || h.park(ws[0], h.mark(ws[0], "")) {
		t.Fatal("parked waiters told to try at once")
	}
	gen := h.gen

	// Three nodes announce one release: one waiter wakes, the first to come.
	for range 3 {
		c.released(gen, key, "r1")
	}
	if !woken(ws[0]) || woken(ws[1]) || woken(ws[2]) {
		t.Fatal("one release did not wake exactly the first waiter")
	}
	// It lost (the release had not reached every node when it tried): the
	// announcements that came meanwhile make it try again at once.
	if !h.park(ws[0], h.mark(ws[0], "")) {
		t.Fatal("woken waiter that lost while announcements came in did not retry at once")
	}
	// It lost again, and only then do more nodes announce the release: they
	// wake it again, not the others.
	if h.park(ws[0], h.mark(ws[0], "")) {
		t.Fatal("retried at once with nothing announced")
	}
	c.released(gen, key, "r1")
	if !woken(ws[0]) || woken(ws[1]) || woken(ws[2]) {
		t.Fatal("a late announcement did not wake the waiter that lost to the release's slow nodes")
	}
	// It got the lock: a late announcement of the same release wakes no one.
	c.leaveWaiters(ws[0], true)
	c.released(gen, key, "r1")
	if woken(ws[1]) || woken(ws[2]) {
		t.Fatal("a duplicate announcement woke another waiter")
	}
	// A new release wakes the next; it gives up without the lock: the wake
	// passes on to the last.
	c.released(gen, key, "r2")
	if !woken(ws[1]) || woken(ws[2]) {
		t.Fatal("the second release did not wake the second waiter")
	}
	c.leaveWaiters(ws[1], false)
	if !woken(ws[2]) {
		t.Fatal("a woken waiter that left without the lock did not pass the wake on")
	}
	c.leaveWaiters(ws[2], true)
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
	w := c.joinWaiters(context.Background(), key, time.Second)
	if h.subs == nil {
		t.Fatal("no subscriptions for a new waiter")
	}
	c.leaveWaiters(w, false)
	_ = c.Close()
	if c.joinWaiters(context.Background(), key, time.Second) != nil || h.subs != nil {
		t.Fatal("closed client subscribes again")
	}
}

// With notifications off, nothing is registered and no announcement is
// published by memory nodes.
func TestHubOff(t *testing.T) {
	_, err := New([]node.Node{node.NewMemory("m0")}, WithReleaseNotifications(false), WithRetry(nil))
	if err == nil {
		t.Fatal("nil retry accepted")
	}
	c, err := New([]node.Node{node.NewMemory("m0")}, WithReleaseNotifications(false))
	if err != nil {
		t.Fatal(err)
	}
	if c.joinWaiters(context.Background(), "lock:k", time.Second) != nil {
		t.Fatal("waiter registered with notifications off")
	}
	start := time.Now()
	if err := c.waitRelease(t.Context(), nil, seen{}, time.Millisecond); err != nil || time.Since(start) < time.Millisecond {
		t.Fatalf("nil waiter: %v after %s, want a plain sleep", err, time.Since(start))
	}
}
