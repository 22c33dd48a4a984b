package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// TestHoldDoesNotRunFnOnAnEndedLock: Hold runs fn only while the lock is
// held. On a lock already released, or already expired, fn does not run,
// and the errors say why (ErrLockLost).
func TestHoldDoesNotRunFnOnAnEndedLock(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)

	released, err := c.TryAcquire(ctx, uniqueKey(t), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expired, err := c.TryAcquire(ctx, uniqueKey(t), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-expired.Done() // not kept alive: it ends at its validity

	for name, l := range map[string]*redlock.Lock{"released": released, "expired": expired} {
		ran := false
		fnErr, lostErr, releaseErr := l.Hold(ctx, func(context.Context) error { ran = true; return nil })
		if ran {
			t.Errorf("%s: fn ran on a lock that had ended", name)
		}
		if err := errors.Join(fnErr, lostErr, releaseErr); !errors.Is(err, redlock.ErrLockLost) {
			t.Errorf("%s: Hold = (%v, %v, %v), want ErrLockLost", name, fnErr, lostErr, releaseErr)
		}
	}
}
