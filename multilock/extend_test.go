package multilock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/redlock"
)

// Extend extends every key: the set's validity (the earliest of its keys')
// moves to the new ttl, and every key is still ours on the nodes.
func TestExtendMovesEveryKeysValidity(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2)
			ctx := ctxFor(t, 2*time.Minute)
			k := prefixed(t, "a", "b", "c")
			set, err := multilock.Acquire(ctx, cs[0], k, 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = set.Release(ctx) }()
			before := set.ValidUntil()
			start := time.Now()
			if err := set.Extend(ctx, time.Minute); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			vu := set.ValidUntil()
			if !vu.After(before.Add(30*time.Second)) || vu.After(start.Add(time.Minute)) {
				t.Fatalf("ValidUntil %s after Extend(1m) begun at %s (before: %s): not every key moved",
					vu.Sub(start), start.Format(time.StampMilli), before.Sub(start))
			}
			if set.Err() != nil {
				t.Fatalf("set ended: %v", set.Err())
			}
			for _, key := range k {
				if _, err := cs[1].TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("%q after Extend: TryAcquire by another client = %v, want ErrNotAcquired", key, err)
				}
			}
		})
	}
}

// Extend after one key was lost (evicted by an operator, before the
// watchdog noticed) returns ErrLockLost: the set is then lost as a whole,
// Done is closed, Err names the key, and the other keys are free at once.
// Extending an ended set also returns ErrLockLost.
func TestExtendAfterOneKeyLost(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			cs := clientsOn(t, b, 2)
			ctx := ctxFor(t, 2*time.Minute)
			k := prefixed(t, "a", "b", "c")
			// A long ttl: the watchdog does not extend during the test.
			set, err := multilock.Acquire(ctx, cs[0], k, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs[1].ForceRelease(ctx, k[1], ""); err != nil {
				t.Fatal(err)
			}
			err = set.Extend(ctx, time.Minute)
			if !errors.Is(err, redlock.ErrLockLost) {
				t.Fatalf("Extend after %q was lost: %v, want ErrLockLost", k[1], err)
			}
			select {
			case <-set.Done():
			default:
				t.Fatal("Extend returned ErrLockLost, but the set's Done is not closed")
			}
			if cause := set.Err(); !errors.Is(cause, redlock.ErrLockLost) {
				t.Fatalf("Err after the loss: %v, want ErrLockLost", cause)
			}
			for _, key := range []string{k[0], k[2]} {
				l, err := cs[1].TryAcquire(ctx, key, 10*time.Second)
				if err != nil {
					t.Fatalf("%q not released after the loss of %q: %v", key, k[1], err)
				}
				_ = l.Release(ctx)
			}
			if err := set.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrLockLost) {
				t.Fatalf("Extend of a lost set: %v, want ErrLockLost", err)
			}
			if err := set.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
				t.Fatalf("Release of a lost set: %v, want ErrLockLost", err)
			}
		})
	}
}

// Extend of a released set returns ErrLockLost and takes no key back; bad
// arguments return ErrInvalidArgument and leave the set as it was.
func TestExtendEndedOrBadInput(t *testing.T) {
	cs := clientsOn(t, "memory", 2)
	ctx := ctxFor(t, time.Minute)
	k := prefixed(t, "a", "b")
	set, err := multilock.Acquire(ctx, cs[0], k, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{0, -time.Second, time.Millisecond} {
		if err := set.Extend(ctx, ttl); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("Extend(%s) = %v, want ErrInvalidArgument", ttl, err)
		}
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if err := set.Extend(nil, time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("Extend(nil ctx) = %v, want ErrInvalidArgument", err)
	}
	if set.Err() != nil {
		t.Fatalf("bad input ended the set: %v", set.Err())
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := set.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend after Release = %v, want ErrLockLost", err)
	}
	for _, key := range k {
		l, err := cs[1].TryAcquire(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatalf("%q taken back by Extend after Release: %v", key, err)
		}
		_ = l.Release(ctx)
	}
}

// Extend of a set whose context is already cancelled extends nothing and
// says so: the error is ctx's, the set is still held until its old
// validity, and a later Extend succeeds.
func TestExtendCancelledIsNotSuccess(t *testing.T) {
	cs := clientsOn(t, "memory", 1)
	ctx := ctxFor(t, time.Minute)
	set, err := multilock.Acquire(ctx, cs[0], prefixed(t, "a", "b"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = set.Release(ctx) }()
	before := set.ValidUntil()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := set.Extend(cctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Extend with a cancelled ctx = %v, want context.Canceled", err)
	}
	if set.Err() != nil || set.ValidUntil().After(before.Add(time.Second)) {
		t.Fatalf("after a cancelled Extend: Err %v, ValidUntil moved by %s", set.Err(), set.ValidUntil().Sub(before))
	}
	if err := set.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend after a cancelled one: %v", err)
	}
}
