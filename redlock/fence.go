package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// settleFence picks the fence of an acquisition and makes it safe.
//
// Each node counts acquisitions of a key; the fence is the largest count
// among the nodes that granted the lock. The counters can drift apart (an
// attempt that lost still counted on the nodes it reached), and then the
// plain maximum is not enough: a later acquisition on a different majority
// could read a smaller maximum. So before the lock is handed out, a majority
// of its nodes must hold a counter of at least the fence: the nodes whose own
// count equals it already do; the others are raised (RaiseFence, which also
// checks that our token is still there). Every later acquisition's majority
// then meets one of these nodes after our key left it, and counts above our
// fence. In the common case all counters agree and no extra round trip is
// made.
func (c *Client) settleFence(ctx context.Context, key, name, token string, timeout time.Duration, acquired []acquireReply) (uint64, error) {
	var fence uint64
	for _, r := range acquired {
		fence = max(fence, r.Fence)
	}
	var behind []int
	for _, r := range acquired {
		if r.Fence < fence {
			behind = append(behind, r.node)
		}
	}
	atFence := len(acquired) - len(behind)
	if atFence >= c.quorum {
		return fence, nil
	}
	type raised struct {
		node int
		held bool
		err  error
	}
	replies := make(chan raised, len(behind))
	for _, i := range behind {
		go func() {
			nctx, cancel := context.WithTimeout(ctx, timeout)
			held, err := c.nodes[i].RaiseFence(nctx, name, token, fence)
			cancel()
			replies <- raised{i, held, err}
		}()
	}
	var errs []error
	stalled := time.NewTimer(timeout + stallGrace)
	defer stalled.Stop()
	for k := 0; k < len(behind) && atFence < c.quorum; k++ {
		var r raised
		select {
		case r = <-replies:
		case <-stalled.C:
			errs = append(errs, fmt.Errorf("%d node(s) gave no answer within %s", len(behind)-k, timeout))
			k = len(behind)
			continue
		}
		switch {
		case r.err != nil:
			errs = append(errs, c.nodeError(ctx, key, c.nodes[r.node], "fence", r.err))
		case r.held:
			atFence++
		}
	}
	if atFence >= c.quorum {
		return fence, nil
	}
	if len(errs) > 0 {
		return 0, fmt.Errorf("%w: fence %d not settled on a majority: %w", ErrQuorumUnreachable, fence, errors.Join(errs...))
	}
	return 0, fmt.Errorf("%w: lock expired while settling fence %d", ErrNotAcquired, fence)
}
