package statuslock

import (
	"context"
	"fmt"
)

// Func is the work done under a service's status lock. ctx is cancelled
// with cause ErrLockLost (and redlock.ErrLockLost) when the lock cannot be
// kept; fence is the lock's fencing token, to pass with every write
// (Store.Set) so that a late write is refused.
type Func func(ctx context.Context, fence uint64) error

// WithStatusLock waits until it holds the status lock of serviceID
// (retrying per the redlock client's retry policy, or WithRetry's), runs fn
// while the lock is kept alive, then releases the lock.
//
// If the lock cannot be had, fn is not run and the error wraps
// ErrNotAcquired (another holder kept it through every retry),
// ErrQuorumUnreachable (too many lock nodes failed), ErrInvalidArgument or
// ctx.Err(). Otherwise WithStatusLock returns fn's error as fn returned it,
// except when the lock was lost while fn ran: then the error wraps
// ErrLockLost (and fn's error, if any), since fn may not have been alone.
//
// A failed release is logged (warn) and not returned: fn's work is done, and
// the lock's keys expire with their TTL.
func (l *Locker) WithStatusLock(ctx context.Context, serviceID string, fn Func, opts ...Option) error {
	cfg, err := l.call(ctx, serviceID, opts)
	if err != nil {
		return err
	}
	if fn == nil {
		return invalidArg("nil function")
	}
	out, err := l.run(ctx, cfg, serviceID, fn, false)
	if err != nil {
		return err
	}
	return out.result(ctx, cfg, serviceID)
}

// outcome is what happened to fn under the lock.
type outcome struct {
	fence   uint64
	err     error // fn's
	lost    error // why the lock ended before fn returned, wrapping redlock.ErrLockLost
	release error // a failed release
}

// result is WithStatusLock's error once fn ran.
func (o *outcome) result(ctx context.Context, cfg config, serviceID string) error {
	switch {
	case o.release != nil:
		// The work is done; the lock's keys expire with their TTL.
		cfg.logger.WarnContext(ctx, "statuslock: lock release failed", "service", serviceID, "fence", o.fence, "err", o.release)
	case o.lost == nil:
		cfg.logger.DebugContext(ctx, "statuslock: lock released", "service", serviceID, "fence", o.fence)
	}
	if o.lost == nil {
		return o.err
	}
	cfg.logger.WarnContext(ctx, "statuslock: lock lost while the function ran", "service", serviceID, "fence", o.fence, "err", o.lost)
	if o.err != nil {
		return fmt.Errorf("%w: service %q: %w; the function returned: %w", ErrLockLost, serviceID, o.lost, o.err)
	}
	return fmt.Errorf("%w: service %q: %w", ErrLockLost, serviceID, o.lost)
}

// run takes the lock (a single attempt when once) and runs fn under it,
// recording what happened in out. It returns an error (wrapping this
// package's sentinels) only when the lock was not had and fn did not run.
func (l *Locker) run(ctx context.Context, cfg config, serviceID string, fn Func, once bool) (out outcome, err error) {
	lock, err := l.lock(ctx, cfg, serviceID, once)
	if err != nil {
		return out, err
	}
	out.fence = lock.Fence()
	out.err, out.lost, out.release = runHeld(ctx, lock, func(ctx context.Context, fence uint64) error { return fn(ctx, fence) })
	return out, nil
}

// SetStatus writes status for serviceID to store under the service's status
// lock, carrying the lock's fence: WithStatusLock around store.Set. Errors
// are WithStatusLock's, or the store's (ErrStaleFence when a newer holder
// has written meanwhile).
func (l *Locker) SetStatus(ctx context.Context, store Store, serviceID string, status Status, opts ...Option) error {
	switch {
	case store == nil || isNilPointer(store):
		return invalidArg("nil store")
	case !status.Valid():
		return invalidArg("unknown status %q", string(status))
	}
	return l.WithStatusLock(ctx, serviceID, func(ctx context.Context, fence uint64) error {
		return store.Set(ctx, serviceID, status, fence)
	}, opts...)
}
