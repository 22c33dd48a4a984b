package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// settleFence picks the fence of an acquisition and makes it safe.
//
// Each node counts acquisitions of a key; the fence is the largest count
// among the nodes that granted the lock. The counters can drift apart (an
// attempt that lost still counted on the nodes it reached; a node that lost
// its data started again from its clock), and then the plain maximum is not
// enough: a later acquisition on a different majority could read a smaller
// maximum. So before the lock is handed out, a majority of its nodes must
// hold a counter of at least the fence: the nodes whose own count equals it
// already do; the others are raised (RaiseFence, which also checks that our
// token is still there). Every later acquisition's majority then meets one
// of these nodes after our key left it, and counts above our fence. In the
// common case all counters agree and no extra round trip is made.
func (c *Client) settleFence(ctx context.Context, key, name, token string, timeout time.Duration, acquired []answer[node.AcquireReply]) (uint64, error) {
	var fence uint64
	for _, a := range acquired {
		fence = max(fence, a.val.Fence)
	}
	var behind []int
	for _, a := range acquired {
		if a.val.Fence < fence {
			behind = append(behind, a.node)
		}
	}
	t := c.newTally()
	t.yes = len(acquired) - len(behind) // already at the fence
	if t.won() {
		return fence, nil
	}
	r := startRound(c, ctx, "fence", key, behind, timeout, func(ctx context.Context, nd node.Node) (bool, error) {
		return nd.RaiseFence(ctx, name, token, fence, c.cfg.retention)
	})
	defer r.close()
	for !t.won() {
		a, ok := r.next()
		if !ok {
			break
		}
		switch {
		case a.err != nil:
			t.fail(a.err)
		case a.val:
			t.yes++
		}
	}
	if t.won() {
		return fence, nil
	}
	if len(t.failures) > 0 {
		return 0, fmt.Errorf("%w: fence %d not settled on a majority: %w", ErrQuorumUnreachable, fence, t.joined())
	}
	return 0, fmt.Errorf("%w: %q: lock expired while settling fence %d", ErrNotAcquired, key, fence)
}
