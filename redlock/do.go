package redlock

import (
	"context"
	"errors"
	"time"
)

// Do runs fn while holding the lock named key: it acquires the lock
// (retrying per the client's retry policy, like Acquire), extends it
// automatically while fn runs (see Lock.KeepAlive and the WithExtend*
// options), and releases it when fn returns or panics (a panic is re-raised
// after the release).
//
// fn's ctx is cancelled when ctx is, or when the lock is lost: then
// context.Cause(ctx) wraps ErrLockLost, a safety margin before the lock's
// validity ends (WithSafetyMargin). fn should return promptly then, and must
// not assume exclusivity after it.
//
// Do returns the acquisition's error (fn did not run), or fn's error. When
// the lock was lost while fn ran, the loss (errors.Is ErrLockLost) is joined
// with fn's error; a failed release is joined likewise.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	if fn == nil {
		return invalidArg("nil fn")
	}
	l, err := c.Acquire(ctx, key, ttl)
	if err != nil {
		return err
	}
	return c.runHeld(ctx, l, fn)
}

// TryDo is Do with a single attempt, for jobs that must run once across many
// replicas (cron): when another holder has the lock it returns (false, nil)
// without running fn. Otherwise ran is true when fn ran, and err is as for
// Do; other failures to acquire (ErrQuorumUnreachable, say) return (false,
// err).
func (c *Client) TryDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	if fn == nil {
		return false, invalidArg("nil fn")
	}
	l, err := c.TryAcquire(ctx, key, ttl)
	switch {
	case errors.Is(err, ErrNotAcquired):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, c.runHeld(ctx, l, fn)
}

func (c *Client) runHeld(ctx context.Context, l *Lock, fn func(context.Context) error) (err error) {
	l.KeepAlive()
	wctx, cancel := l.Context(context.WithValue(ctx, lockKey{}, l))
	defer cancel()
	// The release must happen whatever fn does, and must not be cut short
	// by the caller's cancellation.
	rctx := context.WithoutCancel(ctx)
	defer func() {
		if r := recover(); r != nil {
			_ = l.Release(rctx)
			panic(r)
		}
	}()
	ferr := fn(wctx)
	lostErr := l.Err() // non-nil: lost while fn ran (nothing else ends it yet)
	rerr := l.Release(rctx)
	if lostErr != nil {
		return errors.Join(ferr, lostErr)
	}
	return errors.Join(ferr, rerr)
}

type lockKey struct{}

// LockFromContext returns the lock that Do or TryDo holds for the fn that
// got ctx, e.g. to read its Fence for the writes fn makes.
func LockFromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
}
