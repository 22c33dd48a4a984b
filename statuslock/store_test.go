package statuslock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/quorumlock/quorumlock/statuslock"
)

// The rules of a fenced store, on memory and on a real Redis server.
func TestStoreFencing(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t)
			id := serviceID(t)
			if _, err := s.Get(ctx, id); !errors.Is(err, statuslock.ErrNotFound) {
				t.Fatalf("Get of an unknown service = %v, want ErrNotFound", err)
			}
			must := func(st statuslock.Status, fence uint64) {
				t.Helper()
				if err := s.Set(ctx, id, st, fence); err != nil {
					t.Fatalf("Set(%s, %d) = %v", st, fence, err)
				}
			}
			get := func() statuslock.Record {
				t.Helper()
				r, err := s.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			must(statuslock.StatusDeploying, 5)
			if r := get(); r != (statuslock.Record{ServiceID: id, Status: statuslock.StatusDeploying, Fence: 5}) {
				t.Fatalf("Get = %+v", r)
			}
			must(statuslock.StatusRunning, 5) // the same holder writes again
			must(statuslock.StatusFailed, 7)  // a newer holder
			err := s.Set(ctx, id, statuslock.StatusRunning, 6)
			if !errors.Is(err, statuslock.ErrStaleFence) {
				t.Fatalf("Set with an older fence = %v, want ErrStaleFence", err)
			}
			if want := "with fence 6: the record has fence 7 from a newer holder"; !strings.Contains(err.Error(), want) {
				t.Errorf("Set with an older fence = %q, want it to say %q", err, want)
			}
			if r := get(); r.Status != statuslock.StatusFailed || r.Fence != 7 {
				t.Fatalf("a refused write changed the record: %+v", r)
			}
			// Fences compare exactly over the whole uint64 range (Lua
			// numbers are doubles: 2^63 and 2^63+1 are one double).
			must(statuslock.StatusRunning, 1<<63+1)
			if err := s.Set(ctx, id, statuslock.StatusStopped, 1<<63); !errors.Is(err, statuslock.ErrStaleFence) {
				t.Fatalf("Set(2^63) after 2^63+1 = %v, want ErrStaleFence", err)
			}
			must(statuslock.StatusStopped, math.MaxUint64)
			if r := get(); r.Status != statuslock.StatusStopped || r.Fence != math.MaxUint64 {
				t.Fatalf("Get = %+v", r)
			}
			// Services are independent.
			if err := s.Set(ctx, id+"-other", statuslock.StatusIdle, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Concurrent writers with distinct fences: whatever the interleaving, the
// record ends with the highest fence, and every write refused was older
// than one accepted before it.
func TestStoreConcurrentWriters(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t)
			id := serviceID(t)
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for fence := uint64(1); fence <= 64; fence++ {
				wg.Go(func() {
					err := s.Set(ctx, id, statuslock.StatusRunning, fence)
					if err != nil && !errors.Is(err, statuslock.ErrStaleFence) {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			r, err := s.Get(ctx, id)
			if err != nil || r.Fence != 64 {
				t.Fatalf("Get = %+v, %v; want fence 64", r, err)
			}
		})
	}
}

func TestStoreRejectsBadInput(t *testing.T) {
	var nilCtx context.Context
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t)
			for what, err := range map[string]error{
				"empty id":       s.Set(ctx, "", statuslock.StatusRunning, 1),
				"unknown status": s.Set(ctx, "svc", statuslock.Status("BOGUS"), 1),
				"empty status":   s.Set(ctx, "svc", "", 1),
				"fence 0":        s.Set(ctx, "svc", statuslock.StatusRunning, 0),
				"nil ctx set":    s.Set(nilCtx, "svc", statuslock.StatusRunning, 1),
				"nil ctx get":    func() error { _, err := s.Get(nilCtx, "svc"); return err }(),
				"empty id get":   func() error { _, err := s.Get(ctx, ""); return err }(),
			} {
				if !errors.Is(err, statuslock.ErrInvalidArgument) {
					t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
				}
			}
			if _, err := s.Get(ctx, "svc"); !errors.Is(err, statuslock.ErrNotFound) {
				t.Fatalf("a rejected write was stored: %v", err)
			}
		})
	}
	if _, err := statuslock.NewRedisStore(nil, ""); !errors.Is(err, statuslock.ErrInvalidArgument) {
		t.Fatalf("NewRedisStore(nil) = %v", err)
	}
}

// The zero MemoryStore is ready to use.
func TestMemoryStoreZeroValue(t *testing.T) {
	var s statuslock.MemoryStore
	if err := s.Set(context.Background(), "svc", statuslock.StatusIdle, 1); err != nil {
		t.Fatal(err)
	}
}
