package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/internal/hold"
)

// Do runs fn while holding the lock named key: it acquires the lock
// (retrying per the client's retry policy, like Acquire), extends it
// automatically while fn runs (see Lock.KeepAlive and WithKeepAlive), and
// releases it when fn returns or panics (a panic is re-raised
// after the release).
//
// fn's ctx is cancelled when ctx is, or when the lock is lost: then
// context.Cause(ctx) wraps ErrLockLost, a safety margin before the lock's
// validity ends (extend.WithSafetyMargin). fn should return promptly then, and must
// not assume exclusivity after it.
//
// Do returns the acquisition's error (fn did not run), or fn's error. When
// the lock was lost while fn ran, the loss (errors.Is ErrLockLost) is joined
// with fn's error; a failed release is joined likewise.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return doLock.Do(ctx, func(ctx context.Context) (*Lock, error) { return c.Acquire(ctx, key, ttl) }, fn)
}

// TryDo is Do with a single attempt, for jobs that must not overlap across
// replicas: when another holder has the lock it returns (false, nil)
// without running fn. Otherwise ran is true when fn ran, and err is as for
// Do; other failures to acquire (ErrQuorumUnreachable, say) return (false,
// err). A replica that tries after fn returned gets the lock and runs
// again: for a scheduled job that must run once per tick, use package tick.
func (c *Client) TryDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	return doLock.TryDo(ctx, func(ctx context.Context) (*Lock, error) { return c.TryAcquire(ctx, key, ttl) }, fn)
}

// doLock is Do and TryDo for a Lock.
var doLock = hold.Kind[*Lock]{NotAcquired: ErrNotAcquired, Invalid: invalidArg, Hold: (*Lock).Hold}

// Hold runs fn while l is held, as Do does after acquiring: it keeps l alive
// (KeepAlive), gives fn a context that is cancelled with a cause wrapping
// ErrLockLost when l is lost (and from which LockFromContext returns l),
// and releases l when fn returns or panics (a panic is re-raised after the
// release). The release is not cut short by ctx's cancellation.
//
// It returns fn's error, the loss of the lock while fn ran (errors.Is
// ErrLockLost; nil if it was kept) and the release's error apart, for
// callers that treat them differently (a failed release is often only worth
// a log line: the TTL cleans up). After a loss the release's ErrLockLost is
// not repeated.
func (l *Lock) Hold(ctx context.Context, fn func(ctx context.Context) error) (fnErr, lostErr, releaseErr error) {
	if ctx == nil || fn == nil {
		return invalidArg("nil context or fn"), nil, nil
	}
	l.KeepAlive() // stopped by Release
	return hold.Run(ctx, context.WithValue(ctx, lockKey{}, l), l, ErrLockLost, fn)
}

type lockKey struct{}

// LockFromContext returns the lock that Do or TryDo holds for the fn that
// got ctx, e.g. to read its Fence for the writes fn makes.
func LockFromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
}
