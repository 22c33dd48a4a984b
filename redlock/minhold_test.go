package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// TestHoldAtLeastLeavesTheKeyUntilTheHoldEnds: a Release before the hold
// ends leaves the key on the nodes with the hold left as its TTL (not the
// lock's longer TTL), so another replica's attempt finds it held; the
// holder's lock has ended as released. Without a hold, Release frees the
// key at once.
func TestHoldAtLeastLeavesTheKeyUntilTheHoldEnds(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	other := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout))
	ctx, key := ctxFor(t), uniqueKey(t)
	const ttl, hold = 10 * time.Minute, 5 * time.Minute
	l, err := c.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	l.HoldAtLeast(hold)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), redlock.ErrReleased) {
		t.Fatalf("after Release the lock's Err is %v", l.Err())
	}
	info, err := c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Remaining > hold || info.Remaining <= 0 {
		t.Fatalf("after an early Release: held %v, remaining %s (hold %s, ttl %s)", info.Held, info.Remaining, hold, ttl)
	}
	if _, err := other.TryAcquire(ctx, key, ttl); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("another client's attempt during the hold: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("a second Release: %v", err)
	}

	l2, err := c.Acquire(ctx, key+"-plain", ttl)
	if err != nil {
		t.Fatal(err)
	}
	l2.HoldAtLeast(hold)
	l2.HoldAtLeast(0) // turned off again
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := other.TryAcquire(ctx, key+"-plain", ttl)
	if err != nil {
		t.Fatalf("without a hold the key is free after Release: %v", err)
	}
	_ = o.Release(ctx)
}
