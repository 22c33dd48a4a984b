package redlock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/internal/hold"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/token"
	"github.com/quorumlock/quorumlock/internal/unanswered"
	"github.com/quorumlock/quorumlock/observe"
)

// Release is the holder's end of a lock: the delete round on every node, or,
// while a HoldAtLeast is not over, one extension to the hold left.

// Release deletes our token's key on every node; after it, no late request
// of the lock creates the key on a node that processed it. Errors:
// ErrLockLost if the lock had ended or was not ours on a majority;
// ErrQuorumUnreachable (retry; the keys expire anyway); ctx's error.
func (l *Lock) Release(ctx context.Context) error {
	if l == nil {
		return errNilLock
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	l.stopKeeping() // no extension is in flight or starts once this returns
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.RLock()
	released, validUntil, ttl := l.released, l.validUntil, l.ttl
	l.mu.RUnlock()
	if released {
		return fmt.Errorf("%w: release %q: already released", ErrLockLost, l.key)
	}
	if held, err := l.releaseHeld(ctx); held {
		return err
	}
	handed, tried, err := l.handOver(ctx, validUntil)
	if handed {
		return err
	}
	start := time.Now()
	t := l.deleteKeys(ctx, ttl, start, tried)
	// A lock that had ended before this call is lost whatever the nodes
	// answer: the deletes above are only cleanup, and failing nodes must
	// not turn that answer into ErrQuorumUnreachable.
	ended := l.Err() != nil || !start.Before(validUntil)
	if !ended && !t.Won() && len(t.Failures) > 0 && !t.Denied() {
		if ctx.Err() != nil {
			return fmt.Errorf("redlock: release %q: %w", l.key, context.Cause(ctx))
		}
		return errUnreachable(&t, fmt.Sprintf("release %q", l.key))
	}
	return l.releaseVerdict(ctx, t, ended, start, validUntil)
}

// deleteKeys is the release's round: it tallies the deletes (yes: the key
// was ours and is gone) until every node answered or, once a majority
// deleted it, the others had a short while to. After a failed hand-over
// (handedOff), a node where the key was not ours counts as deleted: the
// lock was valid when its release began, and the hand-over's round may
// have taken the key there (its undo then deletes it).
func (l *Lock) deleteKeys(ctx context.Context, ttl time.Duration, start time.Time, handedOff bool) quorum.Tally {
	c := l.client
	r := c.rounds.deleteRound(ctx, l.key, l.name, l.token, l.from, ttl, nil, l.sent)
	defer r.Close()
	t := quorum.NewTally(len(c.nodes))
	var linger <-chan time.Time
	for {
		a, ok := r.NextBefore(linger)
		if !ok {
			break
		}
		a.Val = a.Val || (handedOff && a.Err == nil)
		_ = t.CountHeld(a)
		if t.Won() && linger == nil {
			// The key is free on a majority: this client's next waiter can
			// try now, unless this lock ends a run of hand-overs (the
			// other clients' turn: see handOver). Wait a little for the
			// others, so that an immediate re-acquire does not find our
			// key on a slow but healthy node.
			if l.handOvers() < maxHandOvers {
				c.notify.ReleasedLocally(l.name, l.token)
			}
			linger = r.Linger(max(time.Since(start), time.Millisecond))
		}
	}
	return t
}

// releaseVerdict marks the lock released and returns what its release came to
// (t: the deletes' tally; ended: the lock had ended before the call).
func (l *Lock) releaseVerdict(ctx context.Context, t quorum.Tally, ended bool, start, validUntil time.Time) error {
	c := l.client
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	switch {
	case l.Err() != nil:
		return fmt.Errorf("%w: release %q: the lock had ended: %v", ErrLockLost, l.key, l.Err())
	case ended:
		return l.lost(ctx, reasonExpired, fmt.Errorf("%w: release %q: validity had ended %s before release", ErrLockLost, l.key, start.Sub(validUntil)))
	case !t.Won():
		return l.lost(ctx, reasonNotOurs, fmt.Errorf("%w: release %q: held by us on too few nodes (%d of %d)", ErrLockLost, l.key, t.Granted, t.N))
	}
	if l.end(ErrReleased) { // else its expiry ended it first, and said so
		c.obs.Observe(observe.Event{Kind: observe.Released, Key: l.key, Latency: time.Since(start), Context: ctx})
	}
	return nil
}

// HoldAtLeast makes an earlier Release leave the key until d after the
// acquisition (lockAtLeastFor); nodes that lost their data sit it out.
func (l *Lock) HoldAtLeast(d time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdUntil = time.Time{}
	if d > 0 {
		l.holdUntil = l.start.Add(d)
	}
}

// Hold runs fn as Do does after acquiring l (fn does not run on an ended
// lock), and returns apart fn's error, the loss while fn ran (ErrLockLost)
// and the release's error.
func (l *Lock) Hold(ctx context.Context, fn func(ctx context.Context) error) (fnErr, lostErr, releaseErr error) {
	if ctx == nil || fn == nil {
		return invalidArg("nil context or fn"), nil, nil
	}
	if l == nil {
		return nil, errNilLock, nil
	}
	l.KeepAlive() // stopped by Release
	return hold.Run(ctx, context.WithValue(ctx, lockKey{}, l), l, ErrLockLost, fn)
}

type lockKey struct{}

// LockFromContext returns the lock that Do, TryDo or Hold holds for fn.
func LockFromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
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
	for l.client.cfg.checkTTL(ttl) != nil && ttl < maxTTL {
		ttl *= 2 // too short for a round: hold a little longer than asked
	}
	it, err := l.extendable(time.Now(), ttl)
	if err != nil {
		return false, nil // ended: Release reports it and cleans up
	}
	l.client.learning.Tell(ctx, l.name, ttl) // a hold past the recovery period: internal/recovery
	if err := l.client.extendLocks(ctx, []extendItem{it})[0]; err != nil {
		return true, err
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	if l.end(ErrReleased) {
		l.client.obs.Observe(observe.Event{Kind: observe.Released, Key: l.key, Context: ctx})
	}
	return true, nil
}

// maxHandOvers bounds the hand-overs in a row inside one client: the
// release that ends a run gives the other clients' waiters their turn.
// Each turn that passes between clients costs a release round and the
// attempts of the waiters that lose the race; a run of four holders pays
// it once for four (bench/README.md).
const maxHandOvers = 3

// handOvers is the number of hand-overs in a row that gave l the key.
func (l *Lock) handOvers() int {
	if l.from == "" {
		return 0
	}
	return strings.Count(l.from, " ") + 1
}

// handOver hands the key to a waiter of this client parked for it, in one
// round instead of a release and a race: an acquire round for the waiter's
// call under a new token, From ours, which the nodes we hold grant as a
// free key (a larger fence). handed says that our token is gone from a
// majority: ours then ends as released, and err is the release's error.
// Else Release runs as usual; tried says that a round was run. Only a
// lock that did not end a run of maxHandOvers is offered (the release of
// one that did gives the other clients their turn), while valid, and when
// none of its requests can still land (a late one must find a tombstone,
// which only a release leaves). The caller holds l.op.
func (l *Lock) handOver(ctx context.Context, validUntil time.Time) (handed, tried bool, err error) {
	c := l.client
	if l.handOvers() >= maxHandOvers || l.Err() != nil || !time.Now().Before(validUntil) || !l.sent.Settled() {
		return false, false, nil
	}
	w := c.notify.Claim(l.name)
	if w == nil {
		return false, false, nil
	}
	waiter := w.Call()
	if waiter.Ctx.Err() != nil { // it is leaving: no round for it
		c.notify.Deliver(w, nil, "")
		return false, false, nil
	}
	a := acquisition{c: c, ctx: waiter.Ctx, key: l.key, name: l.name, ttl: waiter.TTL, began: waiter.Began,
		token: token.New(), sent: unanswered.New(len(c.nodes)), from: strings.TrimSuffix(l.token+" "+l.from, " ")}
	o := a.attempt(true)
	if o.keep { // a split we led: not worth a second round here
		a.undo(nil)
	}
	left := o.lock != nil && waiter.Ctx.Err() != nil
	if o.lock == nil || left {
		c.notify.Deliver(w, nil, "") // it tries as if woken, or returns its context's error
	} else {
		c.notify.Deliver(w, o.lock, a.token)
	}
	if o.lock == nil {
		return false, true, nil
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	if l.end(ErrReleased) {
		c.obs.Observe(observe.Event{Kind: observe.Released, Key: l.key, Context: ctx})
	}
	if left { // the key is ours under the new token: release it now
		return true, true, o.lock.Release(ctx)
	}
	return true, true, nil
}

// Do runs fn holding the lock named key: it acquires as Acquire, keeps the
// lock alive, and releases it when fn returns or panics (re-raised). If the
// lock is lost, fn's ctx is cancelled with a cause wrapping ErrLockLost
// before the validity ends. It returns the acquisition's error, or fn's
// joined with the loss and a failed release.
func (c *Client) Do(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	return doLock.Do(ctx, func(ctx context.Context) (*Lock, error) { return c.Acquire(ctx, key, ttl) }, fn)
}

// TryDo is Do with one attempt: (false, nil) when another holder has the
// lock. A replica that tries after fn returned runs it again (see package tick).
func (c *Client) TryDo(ctx context.Context, key string, ttl time.Duration, fn func(ctx context.Context) error) (ran bool, err error) {
	return doLock.TryDo(ctx, func(ctx context.Context) (*Lock, error) { return c.TryAcquire(ctx, key, ttl) }, fn)
}

// doLock is Do and TryDo for a Lock.
var doLock = hold.Kind[*Lock]{NotAcquired: ErrNotAcquired, Invalid: invalidArg, Hold: (*Lock).Hold}
