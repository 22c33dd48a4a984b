package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/redlock"
)

// Once the lock was declared lost, Extend fails with
// ErrLockLost and does not move ValidUntil. Loss is final.
func TestExtendAfterLossFails(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3, redlock.WithKeepAlive(extend.WithMaxHold(300*time.Millisecond)))
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.KeepAlive()
	<-l.Done() // the hold cap declares it lost while the nodes still hold it
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v", l.Err())
	}
	vu := l.ValidUntil()
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Extend after loss = %v, want ErrLockLost", err)
	}
	if !l.ValidUntil().Equal(vu) || l.Remaining() != 0 {
		t.Fatalf("Extend after loss moved the validity: %s left", l.Remaining())
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Release after loss = %v, want ErrLockLost", err)
	}
}
