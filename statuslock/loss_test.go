package statuslock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// A manual-mode lock that nothing extends is lost when its validity runs
// out: Done closes, Err wraps ErrLockLost (both packages'), and a context
// from Context, taken before and after the loss, is cancelled with that
// cause. Real nodes; the verdict waits for the events, not for a duration.
func TestManualLockSignalsLoss(t *testing.T) {
	_, c := startNodes(t, 3)
	l := newLocker(t, c)
	ctx := ctxFor(t)
	lock, err := l.TryAcquire(ctx, serviceID(t), statuslock.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Err(); err != nil {
		t.Fatalf("Err while held = %v, want nil", err)
	}
	before, cancel := lock.Context(ctx)
	defer cancel()
	select {
	case <-lock.Done():
	case <-ctx.Done():
		t.Fatal("Done never closed after the lock's validity ran out")
	}
	err = lock.Err()
	if !errors.Is(err, statuslock.ErrLockLost) || !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Err after loss = %v, want ErrLockLost (both packages')", err)
	}
	after, cancelAfter := lock.Context(ctx)
	defer cancelAfter()
	for name, lc := range map[string]context.Context{"before the loss": before, "after the loss": after} {
		<-lc.Done() // the hang guard is ctx's, the parent of both
		if cause := context.Cause(lc); !errors.Is(cause, statuslock.ErrLockLost) || !errors.Is(cause, redlock.ErrLockLost) {
			t.Fatalf("context taken %s: cause %v, want ErrLockLost", name, cause)
		}
	}
	if err := lock.Release(ctx); !errors.Is(err, statuslock.ErrLockLost) {
		t.Fatalf("Release after loss = %v, want ErrLockLost", err)
	}
}

// Release ends the lock without a loss: Done closes, Err wraps
// redlock.ErrReleased and not ErrLockLost, and Context's cause says so. A
// context cancelled by its own cancel is not the lock's end; a nil parent
// is a typed error, not a panic.
func TestManualLockSignalsRelease(t *testing.T) {
	_, c := startNodes(t, 3)
	l := newLocker(t, c)
	ctx := ctxFor(t)
	lock, err := l.TryAcquire(ctx, serviceID(t))
	if err != nil {
		t.Fatal(err)
	}
	own, cancelOwn := lock.Context(ctx)
	cancelOwn()
	if cause := context.Cause(own); !errors.Is(cause, context.Canceled) {
		t.Fatalf("context cancelled by its cancel: cause %v, want context.Canceled", cause)
	}
	if lock.Err() != nil {
		t.Fatalf("Err while held = %v, want nil", lock.Err())
	}
	lc, cancel := lock.Context(ctx)
	defer cancel()
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-lock.Done()
	<-lc.Done()
	for what, err := range map[string]error{"Err": lock.Err(), "Context's cause": context.Cause(lc)} {
		if !errors.Is(err, redlock.ErrReleased) || errors.Is(err, statuslock.ErrLockLost) {
			t.Fatalf("%s after Release = %v, want redlock.ErrReleased, not ErrLockLost", what, err)
		}
	}
	//lint:ignore SA1012 a nil parent on purpose: it must be a typed error, not a panic
	nilParent, _ := lock.Context(nil)
	if cause := context.Cause(nilParent); nilParent.Err() == nil || !errors.Is(cause, statuslock.ErrInvalidArgument) {
		t.Fatalf("Context(nil): err %v cause %v, want cancelled with ErrInvalidArgument", nilParent.Err(), cause)
	}
}
