package locktest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/redlock"
)

// ExpireNow: another client takes the lock at once with a larger fence,
// and the holder's next extension reports the loss.
func TestExpireNowLosesTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		a, b := once(q), once(q)
		la, err := a.TryAcquire(t.Context(), "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		q.ExpireNow("k")
		lb, err := b.TryAcquire(t.Context(), "k", ttl)
		if err != nil {
			t.Fatalf("after ExpireNow: %v", err)
		}
		if lb.Fence() <= la.Fence() {
			t.Fatalf("new fence %d not above %d", lb.Fence(), la.Fence())
		}
		if err := la.Extend(t.Context(), ttl); !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("holder's extend: %v, want ErrLockLost", err)
		}
	})
}

// ExpireNow with nobody taking over: a kept lock still ends, and Do's
// context is cancelled with ErrLockLost.
func TestExpireNowCancelsDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		c := once(q)
		err := c.Do(t.Context(), "k", ttl, func(ctx context.Context) error {
			q.ExpireNow("k")
			<-ctx.Done()
			return context.Cause(ctx)
		})
		if !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("Do: %v, want ErrLockLost", err)
		}
	})
}

// Evict raises the fence and ends a kept lock.
func TestEvictEndsKeptLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		c := once(q)
		l, err := c.TryAcquire(t.Context(), "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		stop := l.KeepAlive()
		defer stop()
		if info := q.Evict("k"); info.Fence < l.Fence() {
			t.Fatalf("evicted %+v", info)
		}
		<-l.Done()
		if !errors.Is(l.Err(), redlock.ErrLockLost) {
			t.Fatalf("Err after eviction: %v", l.Err())
		}
		next, err := c.TryAcquire(t.Context(), "k", ttl)
		if err != nil || next.Fence() <= l.Fence() {
			t.Fatalf("after eviction: %v, fence %d (evicted holder's %d)", err, next.Fence(), l.Fence())
		}
	})
}

// LoseMajority: a kept lock is declared lost before its validity ends.
func TestLoseMajoritySignalsLossBeforeValidityEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		c := once(q)
		l, err := c.TryAcquire(t.Context(), "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		stop := l.KeepAlive()
		defer stop()
		time.Sleep(ttl) // kept past its TTL
		q.LoseMajority()
		valid := l.ValidUntil()
		<-l.Done()
		if !time.Now().Before(valid) || !errors.Is(l.Err(), redlock.ErrLockLost) {
			t.Fatalf("loss at %v, validity until %v: %v", time.Now(), valid, l.Err())
		}
		q.Restore()
	})
}
