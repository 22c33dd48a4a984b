package statuslock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/statuslock"
)

// Manual mode on real nodes: Acquire excludes, fences grow, Extend and
// Release work, and a second Release says the lock is gone.
func TestManualAcquireExtendRelease(t *testing.T) {
	_, c := startNodes(t, 3)
	l := newLocker(t, c, statuslock.WithRetry(retry.Constant(2, 10*time.Millisecond, 0)))
	ctx := ctxFor(t)
	id := serviceID(t)

	first, err := l.Acquire(ctx, id, statuslock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if first.ServiceID() != id || first.Fence() == 0 || first.Remaining() <= 0 {
		t.Fatalf("lock: id %q fence %d remaining %s", first.ServiceID(), first.Fence(), first.Remaining())
	}
	_, err = l.TryAcquire(ctx, id)
	if !errors.Is(err, statuslock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire while held = %v, want ErrNotAcquired (both packages')", err)
	}
	_, err = l.Acquire(ctx, id)
	if !errors.Is(err, statuslock.ErrNotAcquired) {
		t.Fatalf("Acquire while held = %v, want ErrNotAcquired", err)
	}
	// Another service is independent.
	other, err := l.TryAcquire(ctx, id+"-other")
	if err != nil {
		t.Fatal(err)
	}
	_ = other.Release(ctx)

	before := first.ValidUntil()
	time.Sleep(5 * time.Millisecond)
	if err := first.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !first.ValidUntil().After(before) {
		t.Fatal("Extend did not move ValidUntil")
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(ctx); !errors.Is(err, statuslock.ErrLockLost) {
		t.Fatalf("second Release = %v, want ErrLockLost", err)
	}
	if err := first.Extend(ctx, time.Second); !errors.Is(err, statuslock.ErrLockLost) {
		t.Fatalf("Extend after Release = %v, want ErrLockLost", err)
	}
	second, err := l.TryAcquire(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release(ctx)
	if second.Fence() <= first.Fence() {
		t.Fatalf("fence %d after %d", second.Fence(), first.Fence())
	}
}

// Acquire waits through the retry policy for a holder that lets go.
func TestManualAcquireWaitsForRelease(t *testing.T) {
	_, c := startNodes(t, 3)
	// Retries for 10 s and more: the release comes after 100 ms, later on a busy machine.
	l := newLocker(t, c, statuslock.WithRetry(retry.Constant(1000, 10*time.Millisecond, 5*time.Millisecond)))
	ctx := ctxFor(t)
	id := serviceID(t)
	held, err := l.Acquire(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { _ = held.Release(ctx) })
	got, err := l.Acquire(ctx, id)
	if err != nil {
		t.Fatalf("Acquire after the holder released: %v", err)
	}
	_ = got.Release(ctx)
}

// What the fence is for. A holder takes the lock with a short TTL and
// stalls past it (a GC pause: nothing extends the lock, and the holder
// cannot know). Another process takes the lock and writes. When the first
// holder wakes up and writes, the store refuses its older fence: the newer
// status stays.
func TestPausedHolderLateWriteRefused(t *testing.T) {
	_, c := startNodes(t, 3, redlock.WithNodeTimeout(500*time.Millisecond)) // a loaded machine meets it
	stores := stores(t)
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t)
			l := newLocker(t, c, statuslock.WithRetry(retry.Constant(500, 20*time.Millisecond, 10*time.Millisecond)))
			id := serviceID(t)

			api, err := l.Acquire(ctx, id, statuslock.WithTTL(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := store.Get(ctx, id) // the read of a read-modify-write
			if err != nil && !errors.Is(err, statuslock.ErrNotFound) {
				t.Fatal(err)
			}
			_ = rec

			// The pause: the API process is frozen past its TTL. Meanwhile
			// the worker gets the lock (its Acquire waits out the TTL)...
			worker, err := l.Acquire(ctx, id, statuslock.WithTTL(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if worker.Fence() <= api.Fence() {
				t.Fatalf("worker fence %d not above API fence %d", worker.Fence(), api.Fence())
			}
			if err := store.Set(ctx, id, statuslock.StatusRunning, worker.Fence()); err != nil {
				t.Fatal(err)
			}
			// ... and the API wakes up and writes what it computed before.
			err = store.Set(ctx, id, statuslock.StatusDeploying, api.Fence())
			if !errors.Is(err, statuslock.ErrStaleFence) {
				t.Fatalf("late write = %v, want ErrStaleFence", err)
			}
			if err := api.Release(ctx); !errors.Is(err, statuslock.ErrLockLost) {
				t.Fatalf("Release by the paused holder = %v, want ErrLockLost", err)
			}
			if err := worker.Release(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := store.Get(ctx, id)
			if err != nil || got.Status != statuslock.StatusRunning || got.Fence != worker.Fence() {
				t.Fatalf("final record %+v, %v; want RUNNING by the worker", got, err)
			}
		})
	}
}
