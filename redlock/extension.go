package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
)

// extendItem is one lock in an extension round: its new ttl and the
// validity it had when the round started.
type extendItem struct {
	l   *Lock
	ttl time.Duration
	vu  time.Time
}

// extension is the one extension round of manual Extend and of the
// watchdog: every lock's extension goes to each node in one call (one
// pipeline on Redis), and each lock follows rule 6: a majority must confirm
// with Extended (a re-asserted key does not count) before the lock's
// validity ends, and the new validity counts from the start of the round.
// The caller holds each lock's op mutex.
type extension struct {
	c     *Client
	ctx   context.Context
	items []extendItem
	start time.Time
}

// extendLocks runs one extension round of items; it returns one error per
// item.
func (c *Client) extendLocks(ctx context.Context, items []extendItem) []error {
	e := &extension{c: c, ctx: ctx, items: items, start: time.Now()}
	r := e.dispatch()
	defer r.Close()
	t := e.tallyPerLock(r)
	out := make([]error, len(items))
	for k, it := range items {
		out[k] = e.verdict(it, &t[k])
	}
	return out
}

// extendTally is one lock's tally in an extension round.
type extendTally struct {
	quorum.Tally
	decidedAt time.Time // when the q-th Extended arrived
}

// settled reports whether more answers cannot change the verdict: won, lost
// (the refusals alone leave no majority), or short of a majority with too
// few nodes left to make the refusals that many (quorum.Confirm's Final). A
// round that cannot win waits for those nodes, so that failures answering
// first do not hide the refusals.
func (tk *extendTally) settled() bool { return tk.Votes.Final(quorum.Confirm) }

// dispatch sends every item's extension to every node, under the earliest of
// each lock's validity and node timeout (the latest of those).
func (e *extension) dispatch() *quorum.Round[[]node.ExtendResult] {
	c, items, start := e.c, e.items, e.start
	ops := make([]node.ExtendArgs, len(items))
	var deadline time.Time
	for k, it := range items {
		ops[k] = node.ExtendArgs{Name: it.l.name, Token: it.l.token, TTL: c.cfg.nodeTTL(it.ttl), Fence: it.l.fence, Retention: c.cfg.retention,
			Owner: it.l.owner, At: it.l.acquiredAt}
		if d := earliest(it.vu, start.Add(c.cfg.timeoutFor(it.ttl))); d.After(deadline) {
			deadline = d
		}
	}
	label := fmt.Sprintf("(%d locks)", len(items))
	if len(items) == 1 {
		label = items[0].l.key
	}
	for _, it := range items { // an extension can set a missing key
		it.l.sent.Send(true)
	}
	return startRoundAt(&c.rounds, e.ctx, "extend", label, nil, time.Until(deadline), func(ctx context.Context, i int) ([]node.ExtendResult, error) {
		res, err := c.nodes[i].Extend(ctx, ops)
		for _, it := range items {
			it.l.sent.Answered(i, err)
		}
		if err == nil && len(res) != len(ops) {
			err = fmt.Errorf("extend: %d results for %d locks", len(res), len(ops))
		}
		return res, err
	})
}

// tallyPerLock tallies the round's answers per lock until every lock's
// outcome is decided (a node's failure counts against each lock).
func (e *extension) tallyPerLock(r *quorum.Round[[]node.ExtendResult]) []extendTally {
	t := make([]extendTally, len(e.items))
	for k := range t {
		t[k].Tally = quorum.NewTally(len(e.c.nodes))
	}
	all := func() bool {
		for k := range t {
			if !t[k].settled() {
				return false
			}
		}
		return true
	}
	for !all() {
		a, ok := r.Next()
		if !ok {
			break
		}
		now := time.Now()
		for k := range t {
			tk := &t[k]
			switch {
			case a.Err != nil:
				tk.Fail(a.Err)
			case tk.settled():
			case a.Val[k] == node.Extended:
				if tk.Granted++; tk.Won() { // once: a won tally is settled
					tk.decidedAt = now
				}
			default:
				tk.Refused++ // held by another token, refused, or re-asserted
			}
		}
	}
	return t
}

// verdict applies one lock's tally: the lock's new validity, or why it was
// not extended.
func (e *extension) verdict(it extendItem, tk *extendTally) error {
	c, ctx, start, l := e.c, e.ctx, e.start, it.l
	switch {
	case tk.Won() && tk.decidedAt.Before(it.vu):
		l.mu.Lock()
		ok := !l.released && l.Err() == nil
		if ok {
			l.ttl, l.validUntil = it.ttl, start.Add(it.ttl-c.cfg.drift(it.ttl))
		}
		l.mu.Unlock()
		if !ok { // ended while the round was in flight
			return fmt.Errorf("%w: extend %q: lock ended during the round", ErrLockLost, l.key)
		}
		l.rearm()
		c.obs.Observe(observe.Event{Kind: observe.Extended, Key: l.key, Latency: tk.decidedAt.Sub(start), Context: ctx})
		return nil
	case tk.Denied():
		err := l.lost(ctx, reasonNotOurs, fmt.Errorf("%w: extend %q: held by us on too few nodes (%d of %d not ours)", ErrLockLost, l.key, tk.Refused, tk.N))
		l.dropKeys(it.ttl)
		return err
	case tk.Won() || !time.Now().Before(it.vu):
		err := l.lost(ctx, reasonUnconfirmed, fmt.Errorf("%w: extend %q: a majority did not confirm before the validity ended", ErrLockLost, l.key))
		l.dropKeys(it.ttl)
		return err
	}
	err := errUnreachable(&tk.Tally, fmt.Sprintf("extend %q", l.key))
	c.obs.Observe(observe.Event{Kind: observe.Extended, Key: l.key, Reason: reasonNoQuorum, Latency: time.Since(start), Err: err, Context: ctx})
	return err
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// newWatchdog builds the client's watchdog; it validates the keep-alive
// options and runs a goroutine only while it keeps locks.
func (c *Client) newWatchdog() error {
	opts := append([]extend.Option{extend.WithLogger(c.logger)}, c.cfg.keep...)
	wd, err := extend.New(c.renew, opts...)
	if err != nil {
		return invalidArg("%w", err)
	}
	c.keeper = wd
	return nil
}

// keptLocks is the number of locks whose auto-extension is running.
func (c *Client) keptLocks() int { return c.keeper.Len() }

// renew is the watchdog's renew function: one extension round for every
// lock due in a tick (see extendLocks).
// Every lease is a kept lock (Lock.KeepAlive).
func (c *Client) renew(ctx context.Context, leases []extend.Lease) []error {
	out := make([]error, len(leases))
	start := time.Now()
	items := make([]extendItem, 0, len(leases))
	at := make([]int, 0, len(leases))
	for i, k := range leases {
		l := k.(kept).l
		if !l.op.TryLock() { // the holder is extending or releasing it right now
			out[i] = errBusy
			continue
		}
		it, err := l.extendable(start, l.currentTTL())
		if err != nil {
			out[i] = err
			l.op.Unlock()
			continue
		}
		items = append(items, it)
		at = append(at, i)
	}
	if len(items) == 0 {
		return out
	}
	defer func() {
		for _, it := range items {
			it.l.op.Unlock()
		}
	}()
	for k, err := range c.extendLocks(context.WithoutCancel(ctx), items) {
		out[at[k]] = err
	}
	return out
}

// errBusy: the lock was being extended or released by its holder when the
// round started; the watchdog retries it.
var errBusy = fmt.Errorf("redlock: lock busy with another extend or release")

// Extend makes the lock valid for ttl from now, if a majority still holds
// our token and answers in time: an expired lock is never re-acquired.
// Errors: ErrLockLost when it ended or is not ours (final: Done closes),
// ErrQuorumUnreachable (valid until ValidUntil; retry), ErrInvalidArgument.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l == nil {
		return errNilLock
	}
	c := l.client
	if ctx == nil {
		return invalidArg("nil context")
	}
	if err := c.cfg.checkTTL(ttl); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	it, err := l.extendable(time.Now(), ttl)
	if err != nil {
		return err
	}
	err = c.extendLocks(ctx, []extendItem{it})[0]
	if err != nil && ctx.Err() != nil && !errors.Is(err, ErrLockLost) {
		return fmt.Errorf("redlock: extend %q: %w", l.key, context.Cause(ctx))
	}
	return err
}

// extendable checks that the lock may be extended now; the caller holds
// l.op.
func (l *Lock) extendable(start time.Time, ttl time.Duration) (extendItem, error) {
	l.mu.RLock()
	released, vu := l.released, l.validUntil
	l.mu.RUnlock()
	switch {
	case released:
		return extendItem{}, fmt.Errorf("%w: extend %q: already released", ErrLockLost, l.key)
	case l.Err() != nil:
		return extendItem{}, fmt.Errorf("%w: extend %q: the lock has ended: %v", ErrLockLost, l.key, l.Err())
	case !start.Before(vu):
		return extendItem{}, l.lost(context.Background(), reasonExpired, fmt.Errorf("%w: extend %q: validity ended %s ago", ErrLockLost, l.key, start.Sub(vu)))
	}
	return extendItem{l: l, ttl: ttl, vu: vu}, nil
}
