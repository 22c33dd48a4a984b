package statuslock

import (
	"context"

	"github.com/quorumlock/quorumlock/redlock"
)

// runHeld runs fn under lock (redlock's Lock.Hold: kept alive, fn's context
// cancelled on loss, released after), handing fn the lock's fence.
func runHeld(ctx context.Context, lock *redlock.Lock, fn func(ctx context.Context, fence uint64) error) (fnErr, lostErr, releaseErr error) {
	return lock.Hold(ctx, func(ctx context.Context) error { return fn(ctx, lock.Fence()) })
}
