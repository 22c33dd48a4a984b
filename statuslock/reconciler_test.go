package statuslock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// A service whose lock is held elsewhere is skipped after a single attempt:
// the pass does not wait for it, and reconciles the others.
func TestReconcilerSkipsBusyService(t *testing.T) {
	var attempts sync.Map // lock key -> *atomic.Int32
	_, c := startNodes(t, 3, redlock.WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.Attempt {
			n, _ := attempts.LoadOrStore(e.Key, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		}
	})))
	logger, logs := newLogger()
	l := newLocker(t, c, statuslock.WithLogger(logger))
	ctx := ctxFor(t)
	a, b, cc := serviceID(t), serviceID(t), serviceID(t)
	held, err := l.Acquire(ctx, b, statuslock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	attempts.Clear()

	store := statuslock.NewMemoryStore()
	r, err := statuslock.NewReconciler(l,
		func(context.Context) ([]string, error) { return []string{a, b, cc}, nil },
		func(ctx context.Context, id string, fence uint64) error {
			return store.Set(ctx, id, statuslock.StatusRunning, fence)
		})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	pass, err := r.RunOnce(ctx)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pass.Reconciled, []string{a, cc}) || !slices.Equal(pass.Skipped, []string{b}) || len(pass.Failed) != 0 {
		t.Fatalf("pass = %+v", pass)
	}
	if n, _ := attempts.Load(l.Key(b)); n.(*atomic.Int32).Load() != 1 {
		t.Fatalf("%d attempts at the busy service's lock, want 1", n.(*atomic.Int32).Load())
	}
	if took > 25*time.Second { // the busy lock is held for 30 s; a hang guard, not a speed check
		t.Fatalf("the pass waited for the busy service: %s", took)
	}
	for _, id := range []string{a, cc} {
		if rec, err := store.Get(ctx, id); err != nil || rec.Status != statuslock.StatusRunning {
			t.Fatalf("%s not reconciled: %+v %v", id, rec, err)
		}
	}
	if _, err := store.Get(ctx, b); !errors.Is(err, statuslock.ErrNotFound) {
		t.Fatalf("busy service was written: %v", err)
	}
	if !strings.Contains(logs.String(), "service busy, skipped") {
		t.Errorf("skip not logged:\n%s", logs)
	}
}

// The reconcile function runs under the service's lock, with the short
// reconcile TTL and a fence; its errors and a failed listing are reported,
// not fatal to the pass or the loop.
func TestReconcilerRunsUnderLock(t *testing.T) {
	l := newLocker(t, memoryClient(t))
	ctx := ctxFor(t)
	boom := errors.New("boom")
	r, err := statuslock.NewReconciler(l,
		func(context.Context) ([]string, error) { return []string{"ok", "bad"}, nil },
		func(ctx context.Context, id string, fence uint64) error {
			if _, err := l.TryAcquire(ctx, id); !errors.Is(err, statuslock.ErrNotAcquired) {
				t.Errorf("%s: lock not held during reconcile: %v", id, err)
			}
			if fence == 0 {
				t.Errorf("%s: no fence", id)
			}
			if id == "bad" {
				return boom
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	pass, err := r.RunOnce(ctx)
	if err != nil || !slices.Equal(pass.Reconciled, []string{"ok"}) || !errors.Is(pass.Failed["bad"], boom) {
		t.Fatalf("pass = %+v, %v", pass, err)
	}
	listErr := errors.New("db down")
	r2, _ := statuslock.NewReconciler(l,
		func(context.Context) ([]string, error) { return nil, listErr },
		func(context.Context, string, uint64) error { return nil })
	if _, err := r2.RunOnce(ctx); !errors.Is(err, listErr) {
		t.Fatalf("RunOnce = %v, want the listing error", err)
	}
}

// The loop: a pass at Start, then one per interval, never overlapping; Stop
// stops it; Start twice is refused; a stopped reconciler starts again.
// Timing runs on synctest's fake clock, so the interval is checked exactly.
func TestReconcilerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLocker(t, memoryClient(t))
		var mu sync.Mutex
		var starts []time.Duration
		t0 := time.Now()
		r, err := statuslock.NewReconciler(l,
			func(context.Context) ([]string, error) { return []string{"a", "b"}, nil },
			func(ctx context.Context, id string, _ uint64) error {
				if id == "a" {
					mu.Lock()
					starts = append(starts, time.Since(t0))
					mu.Unlock()
				}
				time.Sleep(time.Second) // a slow check of the containers
				return nil
			}) // default interval, 30 s
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx); !errors.Is(err, statuslock.ErrRunning) {
			t.Fatalf("second Start = %v, want ErrRunning", err)
		}
		time.Sleep(95 * time.Second)
		if err := r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		mu.Lock()
		got := slices.Clone(starts)
		mu.Unlock()
		want := []time.Duration{0, 30 * time.Second, 60 * time.Second, 90 * time.Second}
		if !slices.Equal(got, want) {
			t.Fatalf("passes started at %v, want %v", got, want)
		}
		if err := r.Start(ctx); err != nil {
			t.Fatalf("Start after Stop: %v", err)
		}
		if err := r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Stop waits for the running pass; if Stop's context ends first, the pass's
// context is cancelled and Stop reports it.
func TestReconcilerStopWaitsForPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLocker(t, memoryClient(t))
		inPass := make(chan struct{})
		var finished atomic.Bool
		r, _ := statuslock.NewReconciler(l,
			func(context.Context) ([]string, error) { return []string{"a"}, nil },
			func(ctx context.Context, _ string, _ uint64) error {
				close(inPass)
				time.Sleep(3 * time.Second)
				finished.Store(true)
				return nil
			}, statuslock.WithInterval(time.Hour))
		ctx := t.Context()
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-inPass
		if err := r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if !finished.Load() {
			t.Fatal("Stop returned before the running pass finished")
		}

		// Now a pass that only ends when cancelled, and a Stop with a deadline.
		inPass2 := make(chan struct{})
		var cause atomic.Value
		r2, _ := statuslock.NewReconciler(l,
			func(context.Context) ([]string, error) { return []string{"a", "b"}, nil },
			func(ctx context.Context, id string, _ uint64) error {
				if id != "a" {
					t.Errorf("service %s reconciled after Stop", id)
				}
				close(inPass2)
				<-ctx.Done()
				cause.Store(ctx.Err())
				return ctx.Err()
			}, statuslock.WithInterval(time.Hour))
		if err := r2.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-inPass2
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := r2.Stop(sctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop = %v, want DeadlineExceeded", err)
		}
		if cause.Load() == nil {
			t.Fatal("the pass's context was not cancelled")
		}
	})
}

// Start's context ending stops the loop too; Start works again after.
func TestReconcilerContextEndsLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLocker(t, memoryClient(t))
		var passes atomic.Int32
		r, _ := statuslock.NewReconciler(l,
			func(context.Context) ([]string, error) { passes.Add(1); return nil, nil },
			func(context.Context, string, uint64) error { return nil },
			statuslock.WithInterval(time.Second))
		ctx, cancel := context.WithCancel(t.Context())
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond)
		cancel()
		synctest.Wait()
		n := passes.Load()
		time.Sleep(10 * time.Second)
		if passes.Load() != n || n != 3 {
			t.Fatalf("%d passes by cancellation, %d after; want 3 and 3", n, passes.Load())
		}
		if err := r.Start(t.Context()); err != nil {
			t.Fatalf("Start after the context ended: %v", err)
		}
		if err := r.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
