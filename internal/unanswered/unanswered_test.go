package unanswered

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// A node whose requests all came back without error holds nothing that
// may land; a failed request marks its node for good; a request still on
// its way is waited for, at most d.
func TestSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := New(3)
		if !u.Settled() {
			t.Fatal("no request sent, yet not settled")
		}
		u.Send(false)
		u.Answered(0, nil)
		u.Answered(1, errors.New("timeout"))
		if got := u.MayLand(); !slices.Equal(got, []bool{false, true, true}) {
			t.Fatalf("MayLand = %v, want [false true true]", got)
		}
		if u.Settled() {
			t.Fatal("settled with a failed request and one on its way")
		}
		if u.Settle(0, time.Second) {
			t.Fatal("node 0 answered: nothing may land there")
		}
		if !u.Settle(1, time.Second) {
			t.Fatal("node 1 failed: a request may still land there")
		}
		// Node 2's reply comes after 100 ms: Settle waits for it.
		go func() {
			time.Sleep(100 * time.Millisecond)
			u.Answered(2, nil)
		}()
		start := time.Now()
		if u.Settle(2, time.Second) || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("Settle returned after %s: want false once the reply came, at 100ms", time.Since(start))
		}
		// A reply that does not come in time: Settle gives up after d.
		u.Send(false)
		start = time.Now()
		if !u.Settle(0, 50*time.Millisecond) || time.Since(start) != 50*time.Millisecond {
			t.Fatalf("Settle on a request still on its way: want true after 50ms, got after %s", time.Since(start))
		}
		u.Answered(0, nil)
		u.Answered(1, nil)
		u.Answered(2, nil)
	})
}

// Once an extension was sent, Settle does not wait: a kept lock has
// extension rounds in flight most of the time.
func TestSettleDoesNotWaitAfterAnExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := New(1)
		u.Send(true)
		start := time.Now()
		if !u.Settle(0, time.Second) || time.Since(start) != 0 {
			t.Fatalf("waited %s for an extension in flight", time.Since(start))
		}
		var none *Requests
		if !none.Settle(0, time.Second) {
			t.Fatal("a nil Requests knows nothing: a request may land")
		}
	})
}
