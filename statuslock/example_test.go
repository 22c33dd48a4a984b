package statuslock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/statuslock"
)

// memoryLocker returns a Locker on three in-process lock nodes.
func memoryLocker(opts ...statuslock.Option) *statuslock.Locker {
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	locks, err := redlock.New(nodes)
	if err != nil {
		panic(err)
	}
	status, err := statuslock.New(locks, opts...)
	if err != nil {
		panic(err)
	}
	return status
}

// The API and the worker write a service's status under its lock, each
// write carrying the lock's fence.
func ExampleLocker_WithStatusLock() {
	status := memoryLocker()
	store := statuslock.NewMemoryStore()
	ctx := context.Background()

	// API: POST /services/svc-1/deploy
	err := status.WithStatusLock(ctx, "svc-1", func(ctx context.Context, fence uint64) error {
		return store.Set(ctx, "svc-1", statuslock.StatusDeploying, fence)
	})
	fmt.Println("api:", err)

	// Worker: the deployment succeeded.
	err = status.SetStatus(ctx, store, "svc-1", statuslock.StatusRunning)
	fmt.Println("worker:", err)

	rec, _ := store.Get(ctx, "svc-1")
	fmt.Println(rec.Status, "written under a fence:", rec.Fence > 0)
	// Output:
	// api: <nil>
	// worker: <nil>
	// RUNNING written under a fence: true
}

// When the lock stays busy through the retries, the function does not run.
func ExampleLocker_WithStatusLock_busy() {
	status := memoryLocker(statuslock.WithRetry(retry.Constant(2, 10*time.Millisecond, 0)))
	ctx := context.Background()
	held, _ := status.Acquire(ctx, "svc-1")
	defer held.Release(ctx)

	err := status.WithStatusLock(ctx, "svc-1", func(context.Context, uint64) error {
		fmt.Println("never printed")
		return nil
	})
	fmt.Println(errors.Is(err, statuslock.ErrNotAcquired))
	// Output: true
}

// A holder that outlived its lock is refused by the fenced store.
func ExampleStore() {
	status := memoryLocker()
	store := statuslock.NewMemoryStore()
	ctx := context.Background()

	api, _ := status.Acquire(ctx, "svc-1", statuslock.WithTTL(time.Second))
	time.Sleep(1100 * time.Millisecond) // a long GC pause: the lock expired

	worker, _ := status.Acquire(ctx, "svc-1")
	_ = store.Set(ctx, "svc-1", statuslock.StatusRunning, worker.Fence())
	_ = worker.Release(ctx)

	err := store.Set(ctx, "svc-1", statuslock.StatusDeploying, api.Fence()) // the late write
	fmt.Println(errors.Is(err, statuslock.ErrStaleFence))
	rec, _ := store.Get(ctx, "svc-1")
	fmt.Println(rec.Status)
	// Output:
	// true
	// RUNNING
}

// One reconciliation pass; Start runs one at once and then every interval.
func ExampleReconciler() {
	status := memoryLocker()
	store := statuslock.NewMemoryStore()
	running := map[string]bool{"svc-1": true, "svc-2": false} // what the containers say
	r, err := statuslock.NewReconciler(status,
		func(context.Context) ([]string, error) { return []string{"svc-1", "svc-2"}, nil },
		func(ctx context.Context, id string, fence uint64) error {
			want := statuslock.StatusStopped
			if running[id] {
				want = statuslock.StatusRunning
			}
			return store.Set(ctx, id, want, fence)
		})
	if err != nil {
		panic(err)
	}
	pass, _ := r.RunOnce(context.Background())
	fmt.Println("reconciled:", pass.Reconciled)
	for _, id := range pass.Reconciled {
		rec, _ := store.Get(context.Background(), id)
		fmt.Println(id, rec.Status)
	}
	// Output:
	// reconciled: [svc-1 svc-2]
	// svc-1 RUNNING
	// svc-2 STOPPED
}
