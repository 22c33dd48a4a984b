package redlock_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Do keeps the lock for twice its TTL while fn runs; another client
// cannot take it meanwhile, and it is free once Do returns.
func TestDoKeepsLockAliveBeyondTTL(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	other := newClient(t, nodesOf(cl), redlock.WithRetry(retry.Never()))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	const ttl = 3 * time.Second
	var stolen, tries int
	err := c.Do(ctx, key, ttl, func(ctx context.Context) error {
		l, ok := redlock.LockFromContext(ctx)
		if !ok || l.Fence() == 0 {
			return errors.New("no lock in fn's context")
		}
		deadline := time.Now().Add(2 * ttl)
		for time.Now().Before(deadline) {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			tries++
			if ol, err := other.TryAcquire(ctx, key, ttl); err == nil {
				stolen++
				_ = ol.Release(ctx)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if stolen > 0 || tries < 20 {
		t.Fatalf("other client took the lock %d times in %d tries during Do", stolen, tries)
	}
	if h := eventuallyFree(t, cl, c.KeyName(key)); countEqual(h, "") != 3 {
		t.Fatalf("after Do the nodes hold %v", h)
	}
	if n := c.KeptLocks(); n != 0 {
		t.Fatalf("%d locks still kept after Do", n)
	}
}

// Do cancels fn's context with cause ErrLockLost when a majority of nodes
// goes away, before the lock's validity ends.
func TestDoCancelsOnMajorityLoss(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"killed", "restarted-empty"} {
		t.Run(mode, func(t *testing.T) {
			cl, c := start(t, 3)
			ctx := ctxFor(t)
			key := uniqueKey(t)
			const ttl = 5 * time.Second
			type seen struct {
				cancelled  time.Time
				validUntil time.Time // the last one seen before the loss
				cause      error
			}
			var s seen
			err := c.Do(ctx, key, ttl, func(ctx context.Context) error {
				l, _ := redlock.LockFromContext(ctx)
				settled(t, cl, c.KeyName(key), l.Token())
				for _, i := range []int{0, 1} {
					var err error
					if mode == "killed" {
						err = cl.Nodes()[i].Kill()
					} else {
						err = cl.Nodes()[i].Restart(ctx)
					}
					if err != nil {
						return err
					}
				}
				tick := time.NewTicker(2 * time.Millisecond)
				defer tick.Stop()
				for {
					// The lock cuts its validity short once lost; read it
					// only while it is not known lost.
					if vu := l.ValidUntil(); l.Err() == nil {
						s.validUntil = vu
					}
					select {
					case <-ctx.Done():
						s.cancelled, s.cause = time.Now(), context.Cause(ctx)
						return ctx.Err()
					case <-tick.C:
					case <-time.After(3 * ttl):
						return errors.New("fn's context was never cancelled")
					}
				}
			})
			if !errors.Is(s.cause, redlock.ErrLockLost) {
				t.Fatalf("cause %v, want ErrLockLost", s.cause)
			}
			if !s.cancelled.Before(s.validUntil) {
				t.Fatalf("cancelled %s after the validity ended", s.cancelled.Sub(s.validUntil))
			}
			t.Logf("cancelled %s before the validity ended; cause: %v", s.validUntil.Sub(s.cancelled), s.cause)
			if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Do = %v, want the loss joined with fn's error", err)
			}
		})
	}
}

// Do releases the lock when fn panics, then panics again with the value.
func TestDoReleasesOnPanic(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the panic of fn", r)
			}
		}()
		_ = c.Do(ctx, key, 5*time.Second, func(ctx context.Context) error {
			// Acquire returns at a majority; let the last node's write land
			// first, so that what is checked below is Do's release.
			l, _ := redlock.LockFromContext(ctx)
			settled(t, cl, c.KeyName(key), l.Token())
			panic("boom")
		})
		t.Fatal("Do returned after fn panicked")
	}()
	if h := eventuallyFree(t, cl, c.KeyName(key)); countEqual(h, "") != 3 {
		t.Fatalf("after the panic the nodes hold %v", h)
	}
	if n := c.KeptLocks(); n != 0 {
		t.Fatalf("%d locks still kept", n)
	}
}

// TryDo runs fn once, and returns (false, nil) while someone else holds it.
func TestTryDoReturnsFalseWhenHeld(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ran, err := c.TryDo(ctx, key, 5*time.Second, func(context.Context) error {
		t.Error("fn ran while the lock was held")
		return nil
	})
	if ran || err != nil {
		t.Fatalf("TryDo = (%v, %v), want (false, nil)", ran, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	want := errors.New("job failed")
	ran, err = c.TryDo(ctx, key, 5*time.Second, func(context.Context) error { return want })
	if !ran || !errors.Is(err, want) {
		t.Fatalf("TryDo = (%v, %v), want (true, fn's error)", ran, err)
	}
}

// WithMaxHold ends a kept lock at the cap even though it could be extended.
func TestDoMaxHold(t *testing.T) {
	t.Parallel()
	c := newClient(t, []node.Node{memnode.New("a")}, redlock.WithKeepAlive(extend.WithMaxHold(400*time.Millisecond)))
	ctx := ctxFor(t)
	began := time.Now()
	err := c.Do(ctx, uniqueKey(t), 300*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, extend.ErrMaxHold) {
		t.Fatalf("Do = %v, want ErrLockLost and ErrMaxHold", err)
	}
	if held := time.Since(began); held < 400*time.Millisecond {
		t.Fatalf("ended after %s, before the cap", held)
	}
}

// TestDoReleasesWhenFnExitsTheGoroutine: a fn that ends its goroutine
// without returning (runtime.Goexit, as t.FailNow does) still has its lock
// released, not kept alive by the watchdog for as long as the client lives.
func TestDoReleasesWhenFnExitsTheGoroutine(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	for _, name := range []string{"Do", "TryDo"} {
		key := uniqueKey(t)
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			fn := func(context.Context) error { runtime.Goexit(); return nil }
			if name == "Do" {
				_ = c.Do(ctx, key, 10*time.Second, fn)
			} else {
				_, _ = c.TryDo(ctx, key, 10*time.Second, fn)
			}
		}()
		<-exited
		info, err := c.Inspect(ctx, key)
		if err != nil {
			t.Fatalf("%s: inspect: %v", name, err)
		}
		if info.Held {
			t.Errorf("%s: the lock is still held after fn's goroutine exited", name)
		}
	}
}
