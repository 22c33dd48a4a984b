package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Lock is one acquisition of a key. Key, Token and Fence never change;
// ValidUntil moves forward with each Extend. A Lock is safe to use from
// several goroutines: Extend and Release are serialized. Done, Err and
// Context tell when the lock ends (see loss.go); KeepAlive extends it
// automatically.
type Lock struct {
	client *Client
	key    string // as the caller named it
	name   string // on the nodes, prefix included
	token  string
	fence  uint64

	op sync.Mutex // serializes Extend and Release

	mu         sync.RWMutex
	ttl        time.Duration
	validUntil time.Time // monotonic
	released   bool

	life lifecycle // Done, Err, Context, KeepAlive; see loss.go
}

func newLock(c *Client, key, name, token string, fence uint64, ttl time.Duration, start time.Time) *Lock {
	l := &Lock{
		client: c, key: key, name: name, token: token, fence: fence,
		ttl: ttl, validUntil: start.Add(ttl - c.cfg.drift(ttl)),
	}
	l.startLife()
	return l
}

// Key is the lock's name as given to Acquire (without the client's prefix).
func (l *Lock) Key() string { return l.key }

// Token is the random value that proves this acquisition on the nodes.
// Treat it as a secret: whoever has it can release the lock.
func (l *Lock) Token() string { return l.token }

// Fence is a number greater than the fence of every earlier acquisition of
// the same key (as long as no node loses its data). Send it with every write
// to the resource the lock protects, and have the resource refuse writes
// whose fence is lower than one it has already seen: that turns a holder
// that outlived its lock (a long GC pause, say) into a refused write instead
// of a lost update.
func (l *Lock) Fence() uint64 { return l.fence }

// TTL is the time to live of the last successful acquire or extend.
func (l *Lock) TTL() time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.ttl
}

// ValidUntil is the instant, on this process's monotonic clock, after which
// the lock may be held by someone else. Work that must be exclusive has to
// finish before it.
func (l *Lock) ValidUntil() time.Time {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.validUntil
}

// Remaining is the validity left: ValidUntil minus now, or zero once past
// or after Release.
func (l *Lock) Remaining() time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.released {
		return 0
	}
	return max(time.Until(l.validUntil), 0)
}

func (l *Lock) expire(now time.Time) {
	l.mu.Lock()
	if now.Before(l.validUntil) {
		l.validUntil = now
	}
	l.mu.Unlock()
}

type nodeOutcome struct {
	node int
	res  ExtendResult // Release: Extended means "deleted"
	err  error
}

// fanOut runs op on every node at once and reads replies until decided
// reports true, or the linger it asked for has passed, or all nodes
// answered. Replies that arrive later are dropped: the channel is buffered so
// the node goroutines never block.
//
// The requests share one deadline, released by the last node to answer, not
// when fanOut returns: a straggler's request must still land (a release
// must still delete), and cancelling it would make go-redis drop the
// connection.
func (l *Lock) fanOut(parent context.Context, deadline time.Time, op string, call func(context.Context, Node) (ExtendResult, error), decided func(yes, no, failed int) (done bool, linger time.Duration)) (yes, no int, failures []error) {
	c := l.client
	ctx, answered := sharedDeadline(parent, time.Until(deadline), len(c.nodes))
	replies := make(chan nodeOutcome, len(c.nodes))
	for i, node := range c.nodes {
		go func() {
			res, err := call(ctx, node)
			replies <- nodeOutcome{node: i, res: res, err: err}
			answered()
		}()
	}
	// Whatever has not answered by the deadline counts as failed, even if
	// its client ignores the context.
	expired := time.NewTimer(time.Until(deadline))
	defer expired.Stop()
	var lingered <-chan time.Time
	for pending := len(c.nodes); pending > 0; pending-- {
		var r nodeOutcome
		select {
		case r = <-replies:
		case <-lingered:
			return yes, no, failures
		case <-expired.C:
			failures = append(failures, fmt.Errorf("%d node(s) gave no answer: %w", pending, context.DeadlineExceeded))
			return yes, no, failures
		case <-parent.Done():
			failures = append(failures, fmt.Errorf("%d node(s) gave no answer: %w", pending, context.Cause(parent)))
			return yes, no, failures
		}
		switch {
		case r.err != nil:
			failures = append(failures, c.nodeError(ctx, l.key, c.nodes[r.node], op, r.err))
		case r.res == Extended:
			yes++
		default:
			no++
		}
		done, linger := decided(yes, no, len(failures))
		if done {
			break
		}
		if linger > 0 && lingered == nil {
			t := time.NewTimer(linger)
			defer t.Stop()
			lingered = t.C
		}
	}
	return yes, no, failures
}

// Extend makes the lock valid for ttl more, counted from the start of this
// call. It needs a majority of nodes that still hold our token, answering
// before the current validity ends. A node that lost the key (restarted
// empty) gets it back, but does not count toward that majority: an expired
// lock is never silently re-acquired.
//
// Errors: ErrLockLost when the lock expired by our clock, was released, or
// a majority says it is not ours (the lock is then over: ValidUntil is in
// the past); ErrQuorumUnreachable when too many nodes failed (the lock stays
// valid until its current ValidUntil, and Extend may be tried again);
// ErrInvalidArgument for a bad ttl.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	c := l.client
	if ctx == nil {
		return invalidArg("nil context")
	}
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	start := time.Now()
	l.mu.RLock()
	released, validUntil := l.released, l.validUntil
	l.mu.RUnlock()
	if released {
		return fmt.Errorf("%w: extend %q: already released", ErrLockLost, l.key)
	}
	if !start.Before(validUntil) {
		return l.lost(ctx, fmt.Errorf("%w: extend %q: validity ended %s ago", ErrLockLost, l.key, start.Sub(validUntil)))
	}
	// Answers count only if they arrive while the lock is still valid.
	deadline := start.Add(c.cfg.timeoutFor(ttl))
	if validUntil.Before(deadline) {
		deadline = validUntil
	}
	q, n := c.quorum, len(c.nodes)
	yes, no, failures := l.fanOut(ctx, deadline, "extend", func(ctx context.Context, node Node) (ExtendResult, error) {
		return node.Extend(ctx, l.name, l.token, ttl, l.fence)
	}, func(yes, no, failed int) (bool, time.Duration) { return yes >= q || no+failed > n-q, 0 })

	now := time.Now()
	switch {
	case yes >= q && now.Before(validUntil):
		l.mu.Lock()
		l.ttl, l.validUntil = ttl, start.Add(ttl-c.cfg.drift(ttl))
		l.mu.Unlock()
		l.rearm()
		c.observe(Event{Kind: EventExtended, Key: l.key, Latency: now.Sub(start)})
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("redlock: extend %q: %w", l.key, context.Cause(ctx))
	case no > n-q:
		l.dropKeys(ctx, ttl)
		return l.lost(ctx, fmt.Errorf("%w: extend %q: held by us on too few nodes (%d of %d not ours)", ErrLockLost, l.key, no, n))
	case yes >= q || !now.Before(validUntil):
		l.dropKeys(ctx, ttl)
		return l.lost(ctx, fmt.Errorf("%w: extend %q: majority confirmed after the validity ended", ErrLockLost, l.key))
	}
	return fmt.Errorf("%w: extend %q: %d of %d nodes failed: %w", ErrQuorumUnreachable, l.key, len(failures), n, errors.Join(failures...))
}

// dropKeys deletes our token everywhere after a failed extension: Extend may
// have re-asserted the key on nodes that had lost it, and a lock that is not
// ours must not keep blocking others until those keys expire. The caller's
// cancellation does not cut it short.
func (l *Lock) dropKeys(ctx context.Context, ttl time.Duration) {
	l.fanOut(context.WithoutCancel(ctx), time.Now().Add(l.client.cfg.timeoutFor(ttl)), "release", func(ctx context.Context, node Node) (ExtendResult, error) {
		_, err := node.Release(ctx, l.name, l.token)
		return NotHeld, err
	}, func(int, int, int) (bool, time.Duration) { return false, 0 })
}

func (l *Lock) lost(ctx context.Context, err error) error {
	l.end(err) // first: whoever sees the validity cut short also sees Err
	l.expire(time.Now())
	l.client.observe(Event{Kind: EventLost, Key: l.key, Err: err})
	if lg := l.client.logger; lg.Enabled(ctx, slog.LevelInfo) {
		lg.InfoContext(ctx, "redlock: lock lost", "key", l.key, "token", shortToken(l.token), "err", err)
	}
	return err
}

// Release deletes the lock on every node that holds our token, and never
// another holder's key. It returns nil when a majority deleted it while it
// was still valid; ErrLockLost when it was already released, expired by our
// clock (the keys are deleted anyway), or not ours on a majority;
// ErrQuorumUnreachable when too many nodes failed (Release may be tried
// again; the keys expire with their TTL in any case).
//
// Release returns once a majority deleted the key and the others had a
// short while to answer (as long again as the majority took, at least 1
// ms), so a dead node does not hold it up for a whole node timeout. Deletes
// still in flight then complete in the background; closing the go-redis
// clients at once may cut them short, and such a key, on a minority of
// nodes, expires with its TTL.
func (l *Lock) Release(ctx context.Context) error {
	c := l.client
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
	start := time.Now()
	q, n := c.quorum, len(c.nodes)
	woke := false
	yes, no, failures := l.fanOut(ctx, start.Add(c.cfg.timeoutFor(ttl)), "release", func(ctx context.Context, node Node) (ExtendResult, error) {
		ok, err := c.releaseOn(ctx, node, l.name, l.token) // announces the release; see notify.go
		if ok {
			return Extended, err
		}
		return NotHeld, err
	}, func(yes, no, failed int) (bool, time.Duration) {
		// Once a majority deleted the key, wait a little longer for the
		// stragglers (as long again as the majority took, at least 1 ms)
		// so that an immediate re-acquire does not find our key on a slow
		// but healthy node, without waiting a whole timeout for a dead one.
		if yes < q {
			return false, 0
		}
		if !woke {
			woke = true
			// The key is free on a majority: this client's next waiter can
			// try now, without waiting for the linger or the nodes'
			// announcements.
			c.releasedLocally(l.name, l.token)
		}
		return false, max(time.Since(start), time.Millisecond)
	})

	if yes < q && len(failures) > 0 && no <= n-q {
		if ctx.Err() != nil {
			return fmt.Errorf("redlock: release %q: %w", l.key, context.Cause(ctx))
		}
		return fmt.Errorf("%w: release %q: %d of %d nodes failed: %w", ErrQuorumUnreachable, l.key, len(failures), n, errors.Join(failures...))
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	switch {
	case !start.Before(validUntil):
		return l.lost(ctx, fmt.Errorf("%w: release %q: validity had ended %s before release", ErrLockLost, l.key, start.Sub(validUntil)))
	case yes < q:
		return l.lost(ctx, fmt.Errorf("%w: release %q: held by us on too few nodes (%d of %d)", ErrLockLost, l.key, yes, n))
	}
	l.end(ErrReleased)
	c.observe(Event{Kind: EventReleased, Key: l.key, Latency: time.Since(start)})
	return nil
}
