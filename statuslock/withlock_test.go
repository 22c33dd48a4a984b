package statuslock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/statuslock"
)

// fn runs with the lock held and its fence; the lock is free afterwards.
func TestWithStatusLockRunsUnderLock(t *testing.T) {
	_, c := startNodes(t, 3)
	logger, logs := newLogger()
	l := newLocker(t, c, statuslock.WithLogger(logger))
	ctx := ctxFor(t)
	id := serviceID(t)
	var fences []uint64
	for range 2 {
		err := l.WithStatusLock(ctx, id, func(ctx context.Context, fence uint64) error {
			if _, err := l.TryAcquire(ctx, id); !errors.Is(err, statuslock.ErrNotAcquired) {
				t.Errorf("lock not held inside fn: TryAcquire = %v", err)
			}
			fences = append(fences, fence)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if fences[0] == 0 || fences[1] <= fences[0] {
		t.Fatalf("fences %v do not grow", fences)
	}
	h, err := l.TryAcquire(ctx, id)
	if err != nil {
		t.Fatalf("lock not released after fn: %v", err)
	}
	_ = h.Release(ctx)
	for _, msg := range []string{"acquired lock", "lock released"} {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("log lacks %q:\n%s", msg, logs)
		}
	}
}

// fn's error comes back as fn returned it.
func TestWithStatusLockReturnsFnError(t *testing.T) {
	l := newLocker(t, memoryClient(t))
	boom := errors.New("boom")
	err := l.WithStatusLock(ctxFor(t), "svc", func(context.Context, uint64) error { return boom })
	if err != boom {
		t.Fatalf("err = %v, want fn's error itself", err)
	}
}

// A lock held elsewhere through every retry: fn never runs, the error says
// why, and the retries took the policy's time.
func TestWithStatusLockNotAcquired(t *testing.T) {
	_, c := startNodes(t, 3)
	logger, logs := newLogger()
	l := newLocker(t, c, statuslock.WithLogger(logger),
		statuslock.WithRetry(retry.Constant(3, 20*time.Millisecond, 0)))
	ctx := ctxFor(t)
	id := serviceID(t)
	held, err := l.Acquire(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)

	var ran atomic.Bool
	began := time.Now()
	err = l.WithStatusLock(ctx, id, func(context.Context, uint64) error { ran.Store(true); return nil })
	if ran.Load() {
		t.Fatal("fn ran without the lock")
	}
	if !errors.Is(err, statuslock.ErrNotAcquired) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	if took := time.Since(began); took < 60*time.Millisecond {
		t.Fatalf("gave up after %s, before 3 retries of 20ms", took)
	}
	if !strings.Contains(logs.String(), "failed to acquire lock") {
		t.Errorf("failure not logged:\n%s", logs)
	}
}

// Two of three lock nodes down: fn never runs, ErrQuorumUnreachable.
func TestWithStatusLockQuorumUnreachable(t *testing.T) {
	cl, c := startNodes(t, 3, redlock.WithNodeTimeout(100*time.Millisecond))
	l := newLocker(t, c, statuslock.WithRetry(retry.Constant(2, 10*time.Millisecond, 0)))
	_ = cl.Nodes()[0].Kill()
	_ = cl.Nodes()[1].Kill()
	var ran atomic.Bool
	err := l.WithStatusLock(ctxFor(t), serviceID(t), func(context.Context, uint64) error { ran.Store(true); return nil })
	if ran.Load() {
		t.Fatal("fn ran without the lock")
	}
	if !errors.Is(err, statuslock.ErrQuorumUnreachable) || !errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("err = %v, want ErrQuorumUnreachable", err)
	}
}

// The caller's context ends while waiting: ctx's error, fn not run.
func TestWithStatusLockCancelledWhileWaiting(t *testing.T) {
	l := newLocker(t, memoryClient(t), statuslock.WithRetry(retry.Constant(1000, 10*time.Millisecond, 0)))
	ctx := ctxFor(t)
	held, err := l.Acquire(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = l.WithStatusLock(wctx, "svc", func(context.Context, uint64) error {
		t.Error("fn ran without the lock")
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}

// The lock nodes fail while fn runs, so the release fails: fn's result is
// returned (nil here), and the failed release is logged.
func TestWithStatusLockReleaseFailureLogged(t *testing.T) {
	// Killed nodes refuse at once: the timeout only has to let the live
	// nodes answer the acquisition on a loaded machine.
	cl, c := startNodes(t, 3, redlock.WithNodeTimeout(2*time.Second))
	logger, logs := newLogger()
	l := newLocker(t, c, statuslock.WithLogger(logger))
	ctx := ctxFor(t)
	err := l.WithStatusLock(ctx, serviceID(t), func(context.Context, uint64) error {
		_ = cl.Nodes()[0].Kill()
		_ = cl.Nodes()[1].Kill()
		return nil
	})
	if err != nil {
		t.Fatalf("a failed release was returned as the function's failure: %v", err)
	}
	if !strings.Contains(logs.String(), "lock release failed") {
		t.Fatalf("failed release not logged:\n%s", logs)
	}
}

// The lock cannot be kept while fn runs (a majority of the lock nodes
// freezes): fn's context is cancelled with the loss as its cause before the
// TTL is over, and WithStatusLock reports ErrLockLost. The nodes are slow on
// purpose (SIGSTOP); the node timeout is one a loaded machine meets, and the
// loss is declared a safety margin (ttl/10) before the TTL ends.
func TestWithStatusLockLostWhileRunning(t *testing.T) {
	cl, c := startNodes(t, 3, redlock.WithNodeTimeout(time.Second))
	t.Cleanup(func() {
		_ = cl.Nodes()[0].Resume()
		_ = cl.Nodes()[1].Resume()
	})
	logger, logs := newLogger()
	l := newLocker(t, c, statuslock.WithLogger(logger))
	ttl := 4 * time.Second
	var began, lostAt time.Time
	err := l.WithStatusLock(ctxFor(t), serviceID(t), func(ctx context.Context, _ uint64) error {
		began = time.Now()
		if err := cl.Nodes()[0].Pause(); err != nil {
			return err
		}
		if err := cl.Nodes()[1].Pause(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			lostAt = time.Now()
		case <-time.After(5 * ttl):
			t.Error("fn's context was never cancelled")
		}
		if cause := context.Cause(ctx); !errors.Is(cause, redlock.ErrLockLost) {
			t.Errorf("cause = %v, want ErrLockLost", cause)
		}
		return ctx.Err()
	}, statuslock.WithTTL(ttl))
	if !errors.Is(err, statuslock.ErrLockLost) || !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrLockLost joined with fn's error", err)
	}
	if lostAt.Sub(began) >= ttl {
		t.Fatalf("loss signalled %s after the start, not before the TTL %s", lostAt.Sub(began), ttl)
	}
	if !strings.Contains(logs.String(), "lock lost while the function ran") {
		t.Errorf("loss not logged:\n%s", logs)
	}
}
