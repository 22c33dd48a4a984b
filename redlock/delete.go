package redlock

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/unanswered"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
)

// The delete round deletes a token's key on nodes: for Release (lock.go),
// and in the background for the undo of a failed attempt (acquire.go) and
// the keys of a lost lock (loss.go). Where a request of the token may still
// land (see internal/unanswered), it leaves a tombstone that stops it.

// undo deletes a failed attempt's token, in the background, on every node
// except those marked in skip (they answered that another token holds the
// key): on those that said yes, those that failed (the write may have
// landed before the error), and those that have not answered. Each delete
// leaves a tombstone, so an acquire still in flight cannot set the key
// after it. Close waits for it; the caller's cancellation cannot cut it
// short. Each request has the node timeout; a node it does not reach (an
// error, or no answer in time) is reported to the observer
// (observe.UndoFailed), and keeps the attempt's key until its TTL ends.
func (c *Client) undo(key, name, token string, ttl time.Duration, skip []bool) {
	var nodes []int
	for i := range c.nodes {
		if skip == nil || !skip[i] {
			nodes = append(nodes, i)
		}
	}
	if len(nodes) == 0 {
		return
	}
	c.bg.GoGuarded(c.logger, func() {
		r := c.deleteRound(context.Background(), key, name, token, ttl, nodes, nil)
		defer r.Close()
		for a, ok := r.Next(); ok; a, ok = r.Next() {
			if a.Err != nil && c.cfg.observer != nil {
				c.obs.Observe(observe.Event{Kind: observe.UndoFailed, Key: key, Node: c.nodes[a.Node].Name(), Op: "release", Err: a.Err})
			}
		}
	})
}

// deleteRound deletes our token's key on nodes and leaves a tombstone of the
// token for ttl on those where sent says a request of the token may still
// land (all of them when sent is nil), announcing the release where the
// key was deleted. A node's delete first waits
// (up to a quarter of the node timeout; not after an extension) for the
// token's requests to that node still on their way: they are usually answered by then, and the
// round decides on the other nodes meanwhile.
func (c *Client) deleteRound(ctx context.Context, key, name, token string, ttl time.Duration, nodes []int, sent *unanswered.Requests) *quorum.Round[bool] {
	args := node.ReleaseArgs{Name: name, Token: token}
	if !c.cfg.noNotify {
		args.Channel = c.releaseChannel
	}
	timeout := c.cfg.timeoutFor(ttl)
	return startRoundAt(&c.rounds, ctx, "release", key, nodes, timeout, func(ctx context.Context, i int) (bool, error) {
		a := args
		if sent.Settle(i, timeout/4) {
			a.Tombstone = ttl
		}
		return c.nodes[i].Release(ctx, a)
	})
}
