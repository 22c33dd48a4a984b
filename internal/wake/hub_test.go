package wake

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// channel is the release channel of the test hubs (redlock's default).
const channel = "lock:released"

// woken reports whether w was made active (without blocking).
func woken(w *Waiter) bool {
	select {
	case <-w.wake:
		return true
	default:
		return false
	}
}

// newTestHub returns a Hub over three quiet memory nodes, closed when the test
// ends.
func newTestHub(t *testing.T) *Hub {
	t.Helper()
	h := New(Config{Nodes: []node.Node{quietNode{memnode.New("m0")}, quietNode{memnode.New("m1")}, quietNode{memnode.New("m2")}}, Channel: channel, Timeout: time.Second})
	t.Cleanup(h.Close)
	return h
}

// quietNode is a memory node whose subscription reports "up" before
// Subscribe returns and nothing after it: the hub tests drive every later
// announcement and state change themselves, and a memory node's own report,
// which comes in the background, could arrive after a test had reported
// the subscription down (a restored subscription wakes every waiter).
type quietNode struct{ *memnode.Node }

func (quietNode) Subscribe(_ context.Context, _ string, _ func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	onState(true, nil)
	return func() {}, nil
}

// The hub's rules for one key: FIFO wakes, one waiter per release however
// many nodes announce it, a retry at once for announcements that arrive
// while the woken waiter tries, and the wake passed on by a woken waiter
// that leaves without the lock.
func TestHubRules(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	const key = "lock:k"
	ws := make([]*Waiter, 3)
	for i := range ws {
		ws[i] = h.Join(context.Background(), key, time.Second, Call{})
		if ws[i] == nil {
			t.Fatal("no waiter: notifications off?")
		}
	}
	// Park in reverse: the queue still follows arrival order. (The memory
	// subscriptions came up on join, before any attempt: nothing was
	// missed, so nobody tries again at once.)
	if h.park(ws[2], h.Mark(ws[2], ""), On{All: true}) || h.park(ws[1], h.Mark(ws[1], ""), On{All: true}) || h.park(ws[0], h.Mark(ws[0], ""), On{All: true}) {
		t.Fatal("parked waiters told to try at once")
	}
	gen := h.gen
	allUp(h)

	// Three nodes announce one release: one waiter wakes, the first to come.
	for range 3 {
		h.released(gen, key, "r1")
	}
	if !woken(ws[0]) || woken(ws[1]) || woken(ws[2]) {
		t.Fatal("one release did not wake exactly the first waiter")
	}
	// It lost (the release had not reached every node when it tried): the
	// announcements that came meanwhile make it try again at once.
	if !h.park(ws[0], h.Mark(ws[0], ""), On{All: true}) {
		t.Fatal("woken waiter that lost while announcements came in did not retry at once")
	}
	// It lost again, and only then do more nodes announce the release: they
	// wake it again, not the others.
	if h.park(ws[0], h.Mark(ws[0], "t0"), On{All: true}) {
		t.Fatal("retried at once with nothing announced")
	}
	h.released(gen, key, "r1")
	if !woken(ws[0]) || woken(ws[1]) || woken(ws[2]) {
		t.Fatal("a late announcement did not wake the waiter that lost to the release's slow nodes")
	}
	// It got the lock: a late announcement of the same release wakes no one.
	h.Leave(ws[0], true)
	h.released(gen, key, "r1")
	if woken(ws[1]) || woken(ws[2]) {
		t.Fatal("a duplicate announcement woke another waiter")
	}
	// The release of the lock it got wakes the next (once a majority of
	// the nodes announced it); it gives up without the lock: the wake passes
	// on to the last.
	h.released(gen, key, node.ReleaseID("t0"))
	h.released(gen, key, node.ReleaseID("t0"))
	if !woken(ws[1]) || woken(ws[2]) {
		t.Fatal("the second release did not wake the second waiter")
	}
	h.Leave(ws[1], false)
	if !woken(ws[2]) {
		t.Fatal("a woken waiter that left without the lock did not pass the wake on")
	}
	h.Leave(ws[2], true)
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
	w := h.Join(context.Background(), key, time.Second, Call{})
	if h.subs == nil {
		t.Fatal("no subscriptions for a new waiter")
	}
	h.Leave(w, false)
	h.Close()
	if h.Join(context.Background(), key, time.Second, Call{}) != nil || h.subs != nil {
		t.Fatal("closed hub subscribes again")
	}
}

// With notifications off, nothing is registered, and a wait without a
// waiter is a plain sleep.
func TestHubOff(t *testing.T) {
	t.Parallel()
	h := New(Config{Off: true, Nodes: []node.Node{memnode.New("m0")}, Channel: channel, Timeout: time.Second})
	defer h.Close()
	if h.Join(context.Background(), "lock:k", time.Second, Call{}) != nil {
		t.Fatal("waiter registered with notifications off")
	}
	start := time.Now()
	if err := h.WaitRelease(t.Context(), nil, Seen{}, On{}, time.Millisecond); err != nil || time.Since(start) < time.Millisecond {
		t.Fatalf("nil waiter: %v after %s, want a plain sleep", err, time.Since(start))
	}
}

// A parked waiter wakes on the release of the holder that beat its attempt,
// not on other releases (another client's undo of a lost attempt); after a
// split, on any release; after an attempt that found no quorum, on none.
// Announcements that came while it tried count the same way.
func TestHubWakesOnlyOnTheHolder(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	const key = "lock:k"
	w := h.Join(context.Background(), key, time.Second, Call{})
	gen := h.gen
	allUp(h)
	holder := On{Holder: "h1"}
	if h.park(w, h.Mark(w, "a"), holder) {
		t.Fatal("tried at once with nothing announced")
	}
	majority(h, gen, key, "undo-of-another")
	if woken(w) {
		t.Fatal("another token's release woke a waiter beaten by h1")
	}
	majority(h, gen, key, "h1")
	if !woken(w) {
		t.Fatal("the holder's release did not wake its waiter")
	}
	// Announcements while it tries: only the holder's makes it try again.
	majority(h, gen, key, "undo-of-another2")
	if h.park(w, h.Mark(w, "b"), holder) {
		t.Fatal("tried again at once for another token's release")
	}
	h.released(gen, key, "h1") // wakes it: it is parked (a majority announced h1)
	if !woken(w) {
		t.Fatal("the holder's release did not wake its waiter")
	}
	h.released(gen, key, "h1") // a slow node's announcement while it tries
	if !h.park(w, h.Mark(w, "c"), holder) {
		t.Fatal("did not try again for the holder's release announced while it tried")
	}
	// After a split, any release; after no quorum, none.
	majority(h, gen, key, "x")
	if !h.park(w, h.Mark(w, "d"), On{All: true}) {
		t.Fatal("after a split, a release announced while it tried did not make it try again")
	}
	if h.park(w, h.Mark(w, "e"), On{}) {
		t.Fatal("tried at once after an attempt that found no quorum")
	}
	majority(h, gen, key, "y")
	if woken(w) {
		t.Fatal("a release woke a waiter whose attempt found no quorum")
	}
	h.Leave(w, false)
}

// A release announced while a subscription was broken went unheard: when
// it is back, the parked waiters of every key look again (one per key),
// whatever they wait for.
func TestHubRestoredSubscriptionWakesWaiters(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	a := h.Join(context.Background(), "lock:a", time.Second, Call{})
	b := h.Join(context.Background(), "lock:b", time.Second, Call{})
	gen := h.gen
	if h.park(a, h.Mark(a, "ta"), On{Holder: "h1"}) || h.park(b, h.Mark(b, "tb"), On{}) {
		t.Fatal("tried at once with nothing announced")
	}
	h.subState(gen, 1, false, errors.New("connection reset"))
	if woken(a) || woken(b) {
		t.Fatal("a break woke a waiter")
	}
	h.subState(gen, 1, true, nil)
	if !woken(a) || !woken(b) {
		t.Fatal("a restored subscription did not wake the parked waiters")
	}
	h.Leave(a, false)
	h.Leave(b, false)
}

// allUp confirms every node's subscription, as the nodes do on their own
// but at once: a majority of the hub's nodes is then 2 of its 3.
func allUp(h *Hub) {
	for i := range h.nodes {
		h.subState(h.gen, i, true, nil)
	}
}

// majority announces release on key from 2 of the hub's 3 nodes.
func majority(h *Hub, gen uint64, key, release string) {
	h.released(gen, key, release)
	h.released(gen, key, release)
}

// parkedOnH1 is a hub whose 3 subscriptions are up, with a waiter of key
// parked after its attempt lost to holder h1.
func parkedOnH1(t *testing.T, key string) (*Hub, *Waiter, uint64) {
	h := newTestHub(t)
	w := h.Join(context.Background(), key, time.Second, Call{})
	allUp(h)
	if h.park(w, h.Mark(w, "a"), On{Holder: "h1"}) {
		t.Fatal("tried at once with nothing announced")
	}
	return h, w, h.gen
}

// key is the lock of the hub tests that need only one.
const key = "lock:k"

// A release wakes a waiter once a majority of the nodes announced it:
// before, the holder still holds on a majority and the attempt would lose
// to it. A node whose subscription is down is presumed to have announced.
func TestHubWakesOnAMajoritysAnnouncement(t *testing.T) {
	t.Parallel()
	h, w, gen := parkedOnH1(t, key)
	h.released(gen, key, "h1")
	if woken(w) {
		t.Fatal("woken by one node's announcement of three: the holder still holds on a majority")
	}
	h.released(gen, key, "h1")
	if !woken(w) {
		t.Fatal("not woken once a majority announced the holder's release")
	}
	h.subState(gen, 2, false, errors.New("connection reset"))
	if h.park(w, h.Mark(w, "b"), On{Holder: "h2"}) {
		t.Fatal("tried at once with nothing announced")
	}
	h.released(gen, key, "h2")
	if !woken(w) {
		t.Fatal("with one subscription down, one more node's announcement did not make a majority")
	}
	h.Leave(w, false)
}

// The announcements of a release in progress count even while many other
// releases of the key are announced around them: only the oldest counts
// are dropped, never the one that is still coming in.
func TestHubKeepsCountingARelease(t *testing.T) {
	t.Parallel()
	h, w, gen := parkedOnH1(t, key)
	for i := range maxHeard - 1 {
		h.released(gen, key, fmt.Sprint("older-", i)) // one node each: no majority
	}
	h.released(gen, key, "h1")
	h.released(gen, key, "newer")
	if woken(w) {
		t.Fatal("woken before a majority announced h1")
	}
	h.released(gen, key, "h1")
	if !woken(w) {
		t.Fatal("h1's first announcement was forgotten: a majority announced it and nobody woke")
	}
	h.Leave(w, false)
}
