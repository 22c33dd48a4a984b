package main

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// handoffs measures the handoff of a contended lock: from the moment the
// holder's Release returns to the moment the next holder's Acquire returns.
// A waiter can win before the release has returned (it is woken by the
// release reaching a node, not by the releaser's reply): such a handoff
// counts as 0 and is counted in early. fromStart is the same handoff
// measured from the moment the holder called Release. Not safe for
// concurrent use: the caller serializes it.
type handoffs struct {
	lat, fromStart *harness.Latencies
	early          int
	pending        bool      // a release started and its handoff is not recorded yet
	relStart       time.Time // when that release was called
	relDone        time.Time // when it returned; zero while in flight
	won            bool      // someone acquired while it was in flight
}

func newHandoffs() *handoffs {
	return &handoffs{lat: harness.NewLatencies(1 << 14), fromStart: harness.NewLatencies(1 << 14)}
}

// releasing: the holder calls Release at t.
func (h *handoffs) releasing(t time.Time) {
	h.pending, h.relStart, h.relDone, h.won = true, t, time.Time{}, false
}

// released: the holder's Release returned at t.
func (h *handoffs) released(t time.Time) {
	if !h.pending {
		return
	}
	if h.won {
		h.lat.Add(0)
		h.early++
		h.pending = false
		return
	}
	h.relDone = t
}

// acquired: an Acquire returned with the lock at t.
func (h *handoffs) acquired(t time.Time) {
	if !h.pending || h.won {
		return
	}
	h.fromStart.Add(t.Sub(h.relStart))
	if h.relDone.IsZero() {
		h.won = true
		return
	}
	h.lat.Add(max(t.Sub(h.relDone), 0))
	h.pending = false
}

// pingP50 is the median of n back-to-back PINGs of one node over a fresh
// go-redis client (after one to dial): its round trip with no other load
// from this process.
func pingP50(ctx context.Context, addr string, n int) time.Duration {
	c := newClient(addr, nil)
	defer func() { _ = c.Close() }()
	lat := harness.NewLatencies(n)
	_ = c.Ping(ctx).Err()
	for range n {
		t0 := time.Now()
		if c.Ping(ctx).Err() == nil {
			lat.Add(time.Since(t0))
		}
	}
	return lat.Summary().P50
}

// startPinger PINGs one node every 2 ms over a fresh go-redis client until
// stop is called, which returns the p50: the round trip of one node under
// the load of the batch that runs meanwhile (the handoff's unit).
func startPinger(ctx context.Context, addr string) (stop func() time.Duration) {
	c := newClient(addr, nil)
	_ = c.Ping(ctx).Err()
	lat := harness.NewLatencies(1 << 12)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			t0 := time.Now()
			if c.Ping(ctx).Err() == nil {
				lat.Add(time.Since(t0))
			}
		}
	}()
	return func() time.Duration {
		close(done)
		<-finished
		_ = c.Close()
		return lat.Summary().P50
	}
}
