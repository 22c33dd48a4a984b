// Package hold runs work while a lock is held, once for every lock kind:
// the Do, TryDo and Hold of redlock, semaphore, multilock, rwlock and
// lockdesc are thin wrappers of Kind and Run.
//
// It cannot import redlock (redlock is built on it), so the kinds pass in
// the redlock sentinels that decide an outcome.
package hold

import (
	"context"
	"errors"
)

// Lock is a held lock of any kind.
type Lock interface {
	// Context returns a child of parent cancelled, with the lock's end as
	// its cause, when the lock ends.
	Context(parent context.Context) (context.Context, context.CancelFunc)
	// Err is the cause of the lock's end; nil while it is held.
	Err() error
	// Release gives the lock up.
	Release(ctx context.Context) error
}

// Run runs fn while l is held. fn gets l.Context(fnParent): the kinds make
// fnParent from ctx with the value their FromContext reads. l is released
// when fn returns, panics (a panic is re-raised after the release) or ends
// its goroutine with runtime.Goexit, with a context ctx's cancellation
// cannot cut short: a lock left behind blocks everyone for its TTL.
//
// It returns fn's error, the loss of l while fn ran (l's end wrapping lost;
// nil if l was kept) and the release's error apart. After a loss the
// release's own report of it is not repeated. On a lock that has already
// ended fn does not run: the loss, or the release's error, says why.
func Run(ctx, fnParent context.Context, l Lock, lost error, fn func(context.Context) error) (fnErr, lostErr, releaseErr error) {
	if cause := l.Err(); cause != nil { // fn would run without the lock
		if errors.Is(cause, lost) {
			return nil, cause, nil
		}
		return nil, nil, l.Release(context.WithoutCancel(ctx))
	}
	fnCtx, cancel := l.Context(fnParent)
	defer cancel()
	rctx := context.WithoutCancel(ctx)
	returned := false
	defer func() {
		if returned {
			return
		}
		// fn panicked, or ended its goroutine (runtime.Goexit, as t.FailNow
		// does): release either way, or the watchdog keeps the lock forever.
		r := recover()
		_ = l.Release(rctx)
		if r != nil {
			panic(r)
		}
	}()
	fnErr = fn(fnCtx)
	returned = true
	if cause := l.Err(); errors.Is(cause, lost) { // lost while fn ran (a Release by fn itself is no loss)
		lostErr = cause
	}
	releaseErr = l.Release(rctx)
	if lostErr != nil && errors.Is(releaseErr, lost) {
		releaseErr = nil // already reported as the loss
	}
	return fnErr, lostErr, releaseErr
}

// Kind is what Do and TryDo need to know of one lock kind.
type Kind[L any] struct {
	// NotAcquired is the error of a single attempt that lost to another
	// holder (redlock.ErrNotAcquired): TryDo's (false, nil).
	NotAcquired error
	// Invalid builds the kind's ErrInvalidArgument error.
	Invalid func(format string, args ...any) error
	// Hold runs fn while l is held, as Run does (a method expression such
	// as (*redlock.Lock).Hold).
	Hold func(l L, ctx context.Context, fn func(context.Context) error) (fnErr, lostErr, releaseErr error)
}

// Do acquires a lock with acquire and runs fn while holding it (Hold). It
// returns the acquisition's error (fn did not run), or fn's error joined
// with the loss of the lock or, if it was kept, with a failed release.
func (k Kind[L]) Do(ctx context.Context, acquire func(context.Context) (L, error), fn func(context.Context) error) error {
	if fn == nil {
		return k.Invalid("nil fn")
	}
	l, err := acquire(ctx)
	if err != nil {
		return err
	}
	return k.held(ctx, l, fn)
}

// TryDo is Do with a single attempt, tryAcquire: when another holder has
// the lock (NotAcquired) it returns (false, nil) without running fn; on
// other failures to acquire, (false, err).
func (k Kind[L]) TryDo(ctx context.Context, tryAcquire func(context.Context) (L, error), fn func(context.Context) error) (ran bool, err error) {
	if fn == nil {
		return false, k.Invalid("nil fn")
	}
	l, err := tryAcquire(ctx)
	switch {
	case errors.Is(err, k.NotAcquired):
		return false, nil
	case err != nil:
		return false, err
	}
	err = k.held(ctx, l, func(ctx context.Context) error { ran = true; return fn(ctx) })
	return ran, err // false when the lock ended before fn could run
}

// held runs fn under l and joins the errors as Do documents: a release
// that fails after a loss adds nothing the loss did not say.
func (k Kind[L]) held(ctx context.Context, l L, fn func(context.Context) error) error {
	fnErr, lostErr, releaseErr := k.Hold(l, ctx, fn)
	if lostErr != nil {
		return errors.Join(fnErr, lostErr)
	}
	return errors.Join(fnErr, releaseErr)
}
