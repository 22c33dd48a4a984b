package statuslock

import (
	"context"
	"errors"

	"github.com/quorumlock/quorumlock/redlock"
)

// runHeld runs fn under lock, then releases it: what redlock's Client.Do
// does after acquiring, except that fn gets the lock's fence, and fn's
// error, the loss of the lock and a failed release come back apart. The
// lock is kept alive by the redlock client's watchdog (Lock.KeepAlive), and
// fn's context is the lock's (Lock.Context): cancelled with a cause wrapping
// redlock.ErrLockLost when the lock cannot be kept.
func runHeld(ctx context.Context, lock *redlock.Lock, fn func(ctx context.Context, fence uint64) error) (fnErr, lostErr, releaseErr error) {
	lock.KeepAlive() // stopped by Release
	wctx, cancel := lock.Context(ctx)
	defer cancel()
	// The release must happen whatever fn does, and must not be cut short
	// by the caller's cancellation.
	rctx := context.WithoutCancel(ctx)
	defer func() {
		if r := recover(); r != nil {
			_ = lock.Release(rctx)
			panic(r)
		}
	}()
	fnErr = fn(wctx, lock.Fence())
	if cause := lock.Err(); errors.Is(cause, redlock.ErrLockLost) {
		lostErr = cause
	}
	releaseErr = lock.Release(rctx)
	if lostErr != nil && errors.Is(releaseErr, redlock.ErrLockLost) {
		releaseErr = nil // already reported as the loss
	}
	return fnErr, lostErr, releaseErr
}
