package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/observe"
)

// HoldAtLeast makes the key stay on the nodes until d after the lock's
// acquisition even when Release comes earlier: Release then shortens (or
// lengthens) the key's TTL to the hold left instead of deleting it, and
// the key expires by itself. Other replicas' attempts in the meantime
// find it held. This is ShedLock's lockAtLeastFor: with a job that takes
// microseconds, a replica that fires a little later than the first still
// finds the lock taken. Prefer the tick package, which turns away every
// late replica of a tick, when the job can name its tick. In Client.Do,
// call it on the lock from LockFromContext.
//
// The key may stay a little longer than d when the hold left at Release is
// shorter than an extension round can grant. A Release after d deletes as
// usual; d <= 0 turns it off. A hold longer than the recovery period
// (WithRecoveryPeriod) lasts while the nodes keep their data: a node that
// lost the key counts again for it once the period has passed.
func (l *Lock) HoldAtLeast(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdUntil = time.Time{}
	if d > 0 {
		l.holdUntil = l.start.Add(d)
	}
}

// releaseHeld is Release while a HoldAtLeast is not over: one extension
// to the hold left. handled is false when the hold is over (or was never
// asked for), and Release deletes as usual. The caller holds l.op.
func (l *Lock) releaseHeld(ctx context.Context) (handled bool, err error) {
	l.mu.RLock()
	until, maxTTL := l.holdUntil, l.ttl
	l.mu.RUnlock()
	left := time.Until(until)
	if until.IsZero() || left <= 0 {
		return false, nil
	}
	ttl := left
	for l.client.checkTTL(ttl) != nil && ttl < maxTTL {
		ttl *= 2 // too short for a round: hold a little longer than asked
	}
	it, err := l.extendable(time.Now(), ttl)
	if err != nil {
		return false, nil // ended: Release reports it and cleans up
	}
	if err := l.client.extendLocks(ctx, []extendItem{it})[0]; err != nil {
		return true, err
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	if l.end(ErrReleased) {
		l.client.observe(observe.Event{Kind: observe.Released, Key: l.key, Context: ctx})
	}
	return true, nil
}
