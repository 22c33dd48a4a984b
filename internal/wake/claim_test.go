package wake

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// waitInBackground runs w's WaitRelease (retry delay d) under ctx and
// returns its result on a channel.
func waitInBackground(h *Hub, ctx context.Context, w *Waiter, d time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.WaitRelease(ctx, w, h.Mark(w, "a"), On{Holder: "h1"}, d) }()
	return done
}

// A claimed waiter waits for the hand-over's outcome whatever its timer
// says, and takes the lock delivered to it, once.
func TestClaimedWaiterIgnoresItsTimerAndTakesTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newTestHub(t)
		const key = "lock:k"
		w := h.Join(context.Background(), key, time.Second, Call{TTL: time.Minute})
		allUp(h)
		done := waitInBackground(h, context.Background(), w, time.Second)
		synctest.Wait()
		c := h.Claim(key)
		if c != w || c.Call().TTL != time.Minute {
			t.Fatalf("Claim = %v, want the parked waiter with its call", c)
		}
		if h.Claim(key) != nil {
			t.Fatal("a second Claim while the first runs")
		}
		time.Sleep(2 * time.Second) // past its retry delay
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("a claimed waiter returned (%v) when its timer fired", err)
		default:
		}
		h.Deliver(w, "lock", "new-token")
		if err := <-done; err != nil {
			t.Fatalf("WaitRelease = %v after the delivery", err)
		}
		if v := h.Handed(w); v != "lock" {
			t.Fatalf("Handed = %v, want the delivered lock", v)
		}
		if v := h.Handed(w); v != nil {
			t.Fatalf("Handed a second time = %v, want nil", v)
		}
		h.Leave(w, true)
	})
}

// A claimed waiter whose context ends still waits for the outcome: it
// returns the context's error when handed nothing, and nil (the lock is
// its) when handed the lock, so no lock goes to a caller that left.
func TestClaimedWaiterWhoseContextEndsWaitsForTheOutcome(t *testing.T) {
	for _, handed := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			h := newTestHub(t)
			const key = "lock:k"
			w := h.Join(context.Background(), key, time.Second, Call{})
			allUp(h)
			ctx, cancel := context.WithCancel(context.Background())
			done := waitInBackground(h, ctx, w, time.Minute)
			synctest.Wait()
			if h.Claim(key) != w {
				t.Fatal("the parked waiter was not claimed")
			}
			cancel()
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("a claimed waiter returned (%v) when its context ended", err)
			default:
			}
			var v any
			if handed {
				v = "lock"
			}
			h.Deliver(w, v, "new-token")
			err := <-done
			switch {
			case handed && (err != nil || h.Handed(w) != "lock"):
				t.Fatalf("handed the lock: WaitRelease = %v, want nil and the lock to take", err)
			case !handed && !errors.Is(err, context.Canceled):
				t.Fatalf("handed nothing: WaitRelease = %v, want the context's error", err)
			}
			h.Leave(w, handed)
		})
	}
}

// Nothing is claimed for a key with no parked waiter, or whose woken
// waiter is trying now.
func TestClaimNeedsAParkedWaiterAndNoneTrying(t *testing.T) {
	h := newTestHub(t)
	const key = "lock:k"
	if h.Claim(key) != nil {
		t.Fatal("claimed a waiter of a key nobody waits for")
	}
	a := h.Join(context.Background(), key, time.Second, Call{})
	b := h.Join(context.Background(), key, time.Second, Call{})
	gen := h.gen
	allUp(h)
	h.park(a, h.Mark(a, "a"), On{Holder: "h1"})
	h.park(b, h.Mark(b, "b"), On{Holder: "h1"})
	majority(h, gen, key, "h1") // a wakes, and tries
	if !woken(a) {
		t.Fatal("the release did not wake the first waiter")
	}
	if c := h.Claim(key); c != nil {
		t.Fatal("claimed a waiter while another tries")
	}
	h.Leave(a, true)
	if c := h.Claim(key); c != b {
		t.Fatalf("Claim = %v, want the parked waiter once nobody tries", c)
	}
	h.Deliver(b, nil, "")
	h.Leave(b, false)
}
