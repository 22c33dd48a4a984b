// Package statuslock serializes the status writes of one service across
// processes: the API sets DEPLOYING, the worker sets RUNNING or FAILED, and a
// reconciliation loop corrects drift, each under the service's status lock,
// a Redlock lock (package redlock) named "status:<serviceID>".
//
// The race it prevents: the API's read-modify-write of DEPLOYING starts
// before the worker writes RUNNING and lands after it, so the status says
// DEPLOYING although the service runs. Under the status lock the worker
// waits until the API has released, so RUNNING is written last.
//
// # Fences
//
// A lock alone cannot stop a holder that was frozen past its TTL (a GC
// pause, a VM migration) from writing late, after the next holder. Every
// acquisition has a fence, larger than all earlier ones of the same
// service; pass it with every write and let the store refuse older fences
// (Store, ErrStaleFence). MemoryStore and RedisStore (one hash per service,
// compare-and-set in a Lua script) do.
//
// Each lock records its owner (redlock.WithOwner), so a stuck status can
// be traced ("redlock inspect status:<serviceID>") and evicted with
// fencing intact ("redlock unlock --force").
//
// # Use
//
//	locks, _ := redlock.New(nodes)
//	status, _ := statuslock.New(locks)
//	err := status.WithStatusLock(ctx, serviceID, func(ctx context.Context, fence uint64) error {
//		return store.Set(ctx, serviceID, statuslock.StatusDeploying, fence)
//	})
//
// WithStatusLock waits for the lock (per the redlock client's retry
// policy, or WithRetry), keeps it alive while fn runs, and releases it. If
// the lock cannot be had, fn does not run. If it is lost while fn runs,
// fn's context is cancelled with a cause wrapping redlock.ErrLockLost and
// the error wraps ErrLockLost. A failed release is logged, not returned:
// the lock expires with its TTL. SetStatus is the one-write shorthand.
//
// Acquire, TryAcquire, Lock.Extend and Lock.Release are the manual mode, for
// work that manages its lock itself; Lock.Done, Lock.Err and Lock.Context
// signal the lock's end as those of redlock.Lock do.
//
// A Reconciler runs the reconciliation loop: a pass at Start and then every
// interval, taking each service's lock with a short TTL in a single
// attempt; a service whose lock is busy is skipped until the next pass.
//
// # Defaults
//
//	TTL                DefaultTTL, 10 s          (WithTTL)
//	retry              the redlock client's      (WithRetry; DefaultRetry is its default)
//	key                "status:" + serviceID     (WithKeyPrefix)
//	logger             silent                    (WithLogger)
//	reconcile interval DefaultInterval, 30 s     (WithInterval)
//	reconcile TTL      DefaultReconcileTTL, 5 s  (WithReconcileTTL)
//
// # Errors
//
// Errors wrap this package's sentinels (ErrNotAcquired, ErrLockLost,
// ErrStaleFence, ...) or ctx.Err(), and keep redlock's in the chain:
// check them with errors.Is.
package statuslock
