package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// extendItem is one lock in an extension round: its new ttl and the
// validity it had when the round started.
type extendItem struct {
	l   *Lock
	ttl time.Duration
	vu  time.Time
}

// extendLocks is the one extension round of manual Extend and of the
// watchdog: every lock's extension goes to each node in one call (one
// pipeline on Redis), and each lock follows rule 6: a majority must confirm
// with Extended (a re-asserted key does not count) before the lock's
// validity ends, and the new validity counts from the start of the round.
// The caller holds each lock's op mutex. It returns one error per item.
func (c *Client) extendLocks(ctx context.Context, items []extendItem) []error {
	start := time.Now()
	n, q := len(c.nodes), c.quorum
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
		it.l.sent.send(true)
	}
	r := startRoundAt(c, ctx, "extend", label, nil, time.Until(deadline), func(ctx context.Context, i int) ([]node.ExtendResult, error) {
		res, err := c.nodes[i].Extend(ctx, ops)
		for _, it := range items {
			it.l.sent.answered(i, err)
		}
		if err == nil && len(res) != len(ops) {
			err = fmt.Errorf("extend: %d results for %d locks", len(res), len(ops))
		}
		return res, err
	})
	defer r.close()

	type tally struct {
		yes, no   int
		decidedAt time.Time // when the q-th Extended arrived
	}
	t := make([]tally, len(items))
	var failures []error
	decided := func(tk tally) bool { return tk.yes >= q || tk.no+len(failures) > n-q }
	all := func() bool {
		for _, tk := range t {
			if !decided(tk) {
				return false
			}
		}
		return true
	}
	for !all() {
		a, ok := r.next()
		if !ok {
			break
		}
		if a.err != nil {
			failures = append(failures, a.err)
			continue
		}
		now := time.Now()
		for k := range t {
			tk := &t[k]
			switch {
			case decided(*tk):
			case a.val[k] == node.Extended:
				if tk.yes++; tk.yes == q {
					tk.decidedAt = now
				}
			default:
				tk.no++ // held by another token, refused, or re-asserted
			}
		}
	}

	out := make([]error, len(items))
	for k, it := range items {
		l, tk := it.l, t[k]
		switch {
		case tk.yes >= q && tk.decidedAt.Before(it.vu):
			l.mu.Lock()
			ok := !l.released && l.Err() == nil
			if ok {
				l.ttl, l.validUntil = it.ttl, start.Add(it.ttl-c.cfg.drift(it.ttl))
			}
			l.mu.Unlock()
			if !ok { // ended while the round was in flight
				out[k] = fmt.Errorf("%w: extend %q: lock ended during the round", ErrLockLost, l.key)
				continue
			}
			l.rearm()
			c.observe(Event{Kind: EventExtended, Key: l.key, Latency: tk.decidedAt.Sub(start), Context: ctx})
		case tk.no > n-q:
			out[k] = l.lost(ctx, reasonNotOurs, fmt.Errorf("%w: extend %q: held by us on too few nodes (%d of %d not ours)", ErrLockLost, l.key, tk.no, n))
			l.dropKeys(it.ttl)
		case tk.yes >= q || !time.Now().Before(it.vu):
			out[k] = l.lost(ctx, reasonUnconfirmed, fmt.Errorf("%w: extend %q: a majority did not confirm before the validity ended", ErrLockLost, l.key))
			l.dropKeys(it.ttl)
		default:
			out[k] = fmt.Errorf("%w: extend %q: %d of %d nodes failed: %w", ErrQuorumUnreachable, l.key, len(failures), n, errors.Join(failures...))
			c.observe(Event{Kind: EventExtended, Key: l.key, Reason: reasonNoQuorum, Latency: time.Since(start), Err: out[k], Context: ctx})
		}
	}
	return out
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
