package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/token"
	"github.com/quorumlock/quorumlock/observe"
)

// kept is a lock as the watchdog sees it: a lease with a TTL and a validity.
type kept struct{ l *Lock }

func (k kept) TTL() time.Duration    { return k.l.currentTTL() }
func (k kept) ValidUntil() time.Time { return k.l.ValidUntil() }

func (l *Lock) startLife() {
	l.life.ctx, l.life.cancel = context.WithCancelCause(context.Background())
	vu := l.ValidUntil()
	l.life.mu.Lock() // the timer may fire before the assignment
	l.life.expiry = time.AfterFunc(time.Until(vu), l.expired)
	l.life.mu.Unlock()
}

// Done is closed when the lock ends: released, or lost. A kept lock
// (KeepAlive, Do) is declared lost a safety margin before its validity ends,
// never after; one not kept ends at ValidUntil.
func (l *Lock) Done() <-chan struct{} {
	if l == nil {
		return closedChan
	}
	return l.life.ctx.Done()
}

// Err is nil while the lock is held, then ErrReleased or an error wrapping
// ErrLockLost (and extend.ErrMaxHold when the hold cap ended it).
func (l *Lock) Err() error {
	if l == nil {
		return errNilLock
	}
	if l.life.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.life.ctx)
}

// Context returns a child of parent cancelled when the lock ends, with Err
// as its cause. Call cancel when done with it.
func (l *Lock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if l == nil {
		cancel(errNilLock)
		return ctx, func() { cancel(context.Canceled) }
	}
	if l.life.ctx.Err() != nil {
		cancel(context.Cause(l.life.ctx))
		return ctx, func() { cancel(context.Canceled) }
	}
	stop := context.AfterFunc(l.life.ctx, func() { cancel(context.Cause(l.life.ctx)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// KeepAlive extends the lock through the client's watchdog (WithKeepAlive)
// until Release or stop; stop returns once no extension is in flight.
func (l *Lock) KeepAlive() (stop func()) {
	if l == nil {
		return func() {}
	}
	l.life.mu.Lock()
	defer l.life.mu.Unlock()
	if l.life.ended {
		return func() {}
	}
	if l.life.keep == nil {
		l.client.obs.Observe(observe.Event{Kind: observe.Kept, Key: l.key, Reason: "start"})
		stop := l.client.keeper.Keep(kept{l}, l.watchdogLost)
		l.life.keep = func() { stop(); l.keepStopped() }
	}
	return l.life.keep
}

// keepStopped reports, once, that auto-extension of the lock ended.
func (l *Lock) keepStopped() {
	l.life.unkept.Do(func() { l.client.obs.Observe(observe.Event{Kind: observe.Kept, Key: l.key, Reason: "stop"}) })
}

// stopKeeping stops auto-extension and waits for an extension in flight.
func (l *Lock) stopKeeping() {
	l.life.mu.Lock()
	stop := l.life.keep
	l.life.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// end ends the lock with cause, once. It reports whether this call ended it.
func (l *Lock) end(cause error) bool {
	l.life.mu.Lock()
	if l.life.ended {
		l.life.mu.Unlock()
		return false
	}
	l.life.ended = true
	l.life.expiry.Stop()
	l.life.mu.Unlock()
	l.life.cancel(cause)
	return true
}

// rearm moves the expiry timer to the current ValidUntil.
func (l *Lock) rearm() {
	vu := l.ValidUntil() // before life.mu: endLost takes l.mu, then life.mu
	l.life.mu.Lock()
	defer l.life.mu.Unlock()
	if !l.life.ended {
		l.life.expiry.Reset(time.Until(vu))
	}
}

// expired runs when the expiry timer fires: the lock ends unless it was
// extended meanwhile.
func (l *Lock) expired() {
	l.mu.RLock()
	left := time.Until(l.validUntil)
	l.mu.RUnlock()
	if left > 0 {
		l.rearm()
		return
	}
	err := fmt.Errorf("%w: %q: validity ended", ErrLockLost, l.key)
	if l.end(err) {
		l.client.obs.Observe(observe.Event{Kind: observe.Lost, Key: l.key, Reason: reasonExpired, Err: err})
	}
}

// watchdogLost is the watchdog's onLost: the lock could not be extended and
// its validity is about to end (or the hold cap was reached). The lock is
// over from now on, by our own clock too.
func (l *Lock) watchdogLost(err error) {
	defer l.keepStopped() // after the loss is signalled: an observer must not delay it
	reason := reasonExtendFail
	if errors.Is(err, extend.ErrMaxHold) {
		reason = reasonMaxHold
	}
	// One sentinel per error: a loss caused by failing nodes is a loss, not
	// ErrQuorumUnreachable (the cause stays in the text); the hold cap is
	// the documented exception, wrapping both ErrLockLost and extend.ErrMaxHold.
	switch {
	case errors.Is(err, ErrLockLost):
	case errors.Is(err, extend.ErrMaxHold):
		err = fmt.Errorf("%w: %q: %w", ErrLockLost, l.key, err)
	default:
		err = fmt.Errorf("%w: %q: %v", ErrLockLost, l.key, err)
	}
	if !l.endLost(err) {
		return // an extension already found it lost and said so
	}
	l.client.obs.Observe(observe.Event{Kind: observe.Lost, Key: l.key, Reason: reason, Err: err})
	if lg := l.client.logger; lg.Enabled(context.Background(), slog.LevelWarn) {
		lg.Warn("redlock: lock lost by the watchdog", "key", l.key, "token", token.Short(l.token), "err", err)
	}
}

// currentTTL is the time to live of the last successful acquire or extend.
func (l *Lock) currentTTL() time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.ttl
}

// ValidUntil is when another may hold the lock: exclusive work ends before.
func (l *Lock) ValidUntil() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.validUntil
}

// Remaining is the validity left; zero once past or after Release.
func (l *Lock) Remaining() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.released {
		return 0
	}
	return max(time.Until(l.validUntil), 0)
}

// endLost ends the lock with err and cuts its validity to now, both under
// l.mu: whoever is woken by Done sees the validity cut, and whoever sees
// the validity cut sees Err. It reports whether this call ended the lock.
func (l *Lock) endLost(err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Before(l.validUntil) {
		l.validUntil = now
	}
	return l.end(err)
}

// dropKeys deletes our token everywhere, in the background, once the lock
// is lost: extension may have re-asserted the key on nodes that had lost
// it, and a lock that is not ours must not keep blocking others until
// those keys expire. The tombstones it leaves stop extensions still in
// flight from re-asserting the key afterwards.
func (l *Lock) dropKeys(ttl time.Duration) {
	l.client.rounds.undo(l.key, l.name, l.token, ttl, nil)
}

func (l *Lock) lost(ctx context.Context, reason string, err error) error {
	if !l.endLost(err) {
		return err
	}
	l.client.obs.Observe(observe.Event{Kind: observe.Lost, Key: l.key, Reason: reason, Err: err, Context: ctx})
	if lg := l.client.logger; lg.Enabled(ctx, slog.LevelInfo) {
		lg.InfoContext(ctx, "redlock: lock lost", "key", l.key, "token", token.Short(l.token), "err", err)
	}
	return err
}
