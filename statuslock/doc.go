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
// # Who holds a status lock
//
// Each lock records its owner (redlock.WithOwner; host/pid/program by
// default), so a stuck status can be traced: client.Locks(ctx, "status:*")
// lists who holds which service's lock, "redlock inspect
// status:<serviceID>" shows one, and ForceRelease ("redlock unlock
// --force") evicts a stuck holder with fencing intact.
//
// # Use
//
//	locks, _ := redlock.New(nodes)
//	status, _ := statuslock.New(locks)
//	err := status.WithStatusLock(ctx, serviceID, func(ctx context.Context, fence uint64) error {
//		return store.Set(ctx, serviceID, statuslock.StatusDeploying, fence)
//	})
//
// WithStatusLock waits for the lock (retrying per the redlock client's policy,
// 10 x 200 ms plus up to 100 ms jitter by default, or WithRetry), keeps it
// alive while fn runs (the redlock client's watchdog), and releases it. If
// the lock cannot be had, fn does not run and the error wraps ErrNotAcquired
// or ErrQuorumUnreachable. If the lock is lost while fn runs, fn's context
// is cancelled with a cause wrapping redlock.ErrLockLost and the error wraps
// ErrLockLost. A failed release is logged, not returned: the lock expires
// with its TTL. SetStatus is the one-write shorthand.
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
// Errors wrap one of this package's sentinels (ErrNotAcquired,
// ErrQuorumUnreachable, ErrLockLost, ErrStaleFence, ErrNotFound,
// ErrInvalidArgument, ErrRunning) or the caller's ctx.Err(); errors from
// the lock also keep redlock's sentinel in the chain. Check them with
// errors.Is.
package statuslock
