package statuslock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/statuslock"
)

// The race the status lock exists for (the users' problem scenario):
//
//	T0  the API starts setting DEPLOYING: a read-modify-write that is slow
//	T1  the worker finishes the deployment and sets RUNNING
//	T2  the API's write lands
//
// The API's write stays in flight until the worker's write has completed,
// or for apiWriteDelay at most. Without a lock the worker's write completes
// at once, the API writes after it, and DEPLOYING wins: wrong. With the lock
// the worker cannot write until the API has released, so RUNNING is last.
const (
	raceRuns      = 200
	apiWriteDelay = 10 * time.Millisecond
)

// deployRace plays one round. lock runs a status update, under a lock or
// not. It returns the final status.
func deployRace(t *testing.T, ctx context.Context, store statuslock.Store, id string,
	lock func(ctx context.Context, fn statuslock.Func) error) statuslock.Status {
	t.Helper()
	apiInFlight := make(chan struct{})
	workerWrote := make(chan struct{})
	apiDone := make(chan error, 1)
	go func() {
		apiDone <- lock(ctx, func(ctx context.Context, fence uint64) error {
			rec, err := store.Get(ctx, id) // read ...
			if err != nil {
				return err
			}
			close(apiInFlight)
			select { // ... the write is in flight ...
			case <-workerWrote:
			case <-time.After(apiWriteDelay):
			}
			if rec.Status == statuslock.StatusDeploying { // ... modify ...
				return nil
			}
			return store.Set(ctx, id, statuslock.StatusDeploying, fence) // ... write.
		})
	}()
	<-apiInFlight
	err := lock(ctx, func(ctx context.Context, fence uint64) error {
		return store.Set(ctx, id, statuslock.StatusRunning, fence)
	})
	close(workerWrote)
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	if err := <-apiDone; err != nil {
		t.Fatalf("api: %v", err)
	}
	rec, err := store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Status
}

func TestStatusLockPreventsLostUpdate(t *testing.T) {
	_, c := startNodes(t, 3)
	// Fast retries: the test is about order, not the default timing.
	l := newLocker(t, c, statuslock.WithRetry(retry.Constant(1000, time.Millisecond, time.Millisecond)))
	ctx := ctxFor(t)
	store := statuslock.NewMemoryStore()
	id := serviceID(t)
	for run := range raceRuns {
		err := l.WithStatusLock(ctx, id, func(ctx context.Context, fence uint64) error {
			return store.Set(ctx, id, statuslock.StatusIdle, fence) // reset for this run
		})
		if err != nil {
			t.Fatal(err)
		}
		got := deployRace(t, ctx, store, id, func(ctx context.Context, fn statuslock.Func) error {
			return l.WithStatusLock(ctx, id, fn)
		})
		if got != statuslock.StatusRunning {
			t.Fatalf("run %d: final status %s, want RUNNING", run, got)
		}
	}
}

// The same rounds without the lock: the API's late write overwrites the
// worker's. The test shows the scenario is a real race, so the test above
// could fail.
func TestWithoutLockUpdateIsLost(t *testing.T) {
	ctx := ctxFor(t)
	store := statuslock.NewMemoryStore()
	id := serviceID(t)
	noLock := func(ctx context.Context, fn statuslock.Func) error { return fn(ctx, 1) } // one fence for all: no fencing
	wrong := 0
	for range raceRuns {
		if err := store.Set(ctx, id, statuslock.StatusIdle, 1); err != nil {
			t.Fatal(err)
		}
		if deployRace(t, ctx, store, id, noLock) != statuslock.StatusRunning {
			wrong++
		}
	}
	if wrong == 0 {
		t.Fatal("without a lock the final status was right in every run: the race test proves nothing")
	}
	t.Logf("without a lock, %d of %d runs ended with the wrong status", wrong, raceRuns)
}
