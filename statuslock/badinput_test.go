package statuslock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/statuslock"
)

// Bad input never panics and never locks or runs anything: it is an
// ErrInvalidArgument.
func TestBadInput(t *testing.T) {
	c := memoryClient(t)
	l := newLocker(t, c)
	ctx := context.Background()
	var nilCtx context.Context
	var nilLocker *statuslock.Locker
	var nilStore *statuslock.MemoryStore
	ran := false
	fn := func(context.Context, uint64) error { ran = true; return nil }
	store := statuslock.NewMemoryStore()
	reconcile := func(context.Context, string, uint64) error { return nil }
	services := func(context.Context) ([]string, error) { return nil, nil }

	for name, call := range map[string]func() error{
		"New nil client":         func() error { _, err := statuslock.New(nil); return err },
		"New zero ttl":           func() error { _, err := statuslock.New(c, statuslock.WithTTL(0)); return err },
		"New negative ttl":       func() error { _, err := statuslock.New(c, statuslock.WithTTL(-time.Second)); return err },
		"New nil retry":          func() error { _, err := statuslock.New(c, statuslock.WithRetry(nil)); return err },
		"New bad retry":          func() error { _, err := statuslock.New(c, statuslock.WithRetry(retry.Constant(-1, 0, 0))); return err },
		"New nil logger":         func() error { _, err := statuslock.New(c, statuslock.WithLogger(nil)); return err },
		"New nil option":         func() error { _, err := statuslock.New(c, nil); return err },
		"empty service id":       func() error { return l.WithStatusLock(ctx, "", fn) },
		"nil fn":                 func() error { return l.WithStatusLock(ctx, "svc", nil) },
		"nil ctx":                func() error { return l.WithStatusLock(nilCtx, "svc", fn) },
		"nil Locker":             func() error { return nilLocker.WithStatusLock(ctx, "svc", fn) },
		"call zero ttl":          func() error { return l.WithStatusLock(ctx, "svc", fn, statuslock.WithTTL(0)) },
		"call negative ttl":      func() error { return l.WithStatusLock(ctx, "svc", fn, statuslock.WithTTL(-1)) },
		"ttl below node timeout": func() error { return l.WithStatusLock(ctx, "svc", fn, statuslock.WithTTL(time.Millisecond)) },
		"call nil option":        func() error { return l.WithStatusLock(ctx, "svc", fn, nil) },
		"Acquire empty id":       func() error { _, err := l.Acquire(ctx, ""); return err },
		"TryAcquire empty id":    func() error { _, err := l.TryAcquire(ctx, ""); return err },
		"Acquire zero ttl":       func() error { _, err := l.Acquire(ctx, "svc", statuslock.WithTTL(0)); return err },
		"Acquire nil ctx":        func() error { _, err := l.Acquire(nilCtx, "svc"); return err },
		"SetStatus nil store":    func() error { return l.SetStatus(ctx, nil, "svc", statuslock.StatusRunning) },
		"SetStatus typed nil":    func() error { return l.SetStatus(ctx, nilStore, "svc", statuslock.StatusRunning) },
		"SetStatus bad status":   func() error { return l.SetStatus(ctx, store, "svc", "BOGUS") },
		"SetStatus empty id":     func() error { return l.SetStatus(ctx, store, "", statuslock.StatusRunning) },
		"Reconciler nil locker": func() error {
			_, err := statuslock.NewReconciler(nil, services, reconcile)
			return err
		},
		"Reconciler nil services": func() error { _, err := statuslock.NewReconciler(l, nil, reconcile); return err },
		"Reconciler nil reconcile": func() error {
			_, err := statuslock.NewReconciler(l, services, nil)
			return err
		},
		"Reconciler zero interval": func() error {
			_, err := statuslock.NewReconciler(l, services, reconcile, statuslock.WithInterval(0))
			return err
		},
		"Reconciler negative ttl": func() error {
			_, err := statuslock.NewReconciler(l, services, reconcile, statuslock.WithReconcileTTL(-time.Second))
			return err
		},
		"Reconciler nil option": func() error {
			_, err := statuslock.NewReconciler(l, services, reconcile, nil)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			if !errors.Is(err, statuslock.ErrInvalidArgument) {
				t.Fatalf("err = %v, want ErrInvalidArgument", err)
			}
		})
	}
	if ran {
		t.Fatal("fn ran on bad input")
	}
	// Nothing was left locked: the services are free.
	h, err := l.TryAcquire(ctx, "svc")
	if err != nil {
		t.Fatalf("bad input left a lock behind: %v", err)
	}
	_ = h.Release(ctx)
	if _, err := store.Get(ctx, "svc"); !errors.Is(err, statuslock.ErrNotFound) {
		t.Fatalf("bad input wrote to the store: %v", err)
	}
	// A manual lock's methods reject bad input too.
	if err := h.Extend(ctx, 0); !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Fatalf("Extend(0) = %v", err)
	}
	if err := h.Extend(nilCtx, time.Second); !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Fatalf("Extend(nil ctx) = %v", err)
	}
	if err := h.Release(nilCtx); !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Fatalf("Release(nil ctx) = %v", err)
	}
	r, err := statuslock.NewReconciler(l, services, reconcile)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(nilCtx); !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Fatalf("Start(nil) = %v", err)
	}
	if err := r.Stop(nilCtx); !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Fatalf("Stop(nil) = %v", err)
	}
	if _, err := r.RunOnce(nilCtx); !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Fatalf("RunOnce(nil) = %v", err)
	}
	// The redlock sentinel stays in the chain of a ttl redlock refuses.
	err = l.WithStatusLock(ctx, "svc", fn, statuslock.WithTTL(time.Millisecond))
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("redlock's cause lost: %v", err)
	}
}
