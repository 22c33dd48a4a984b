package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/observe"
)

// Reasons (observe.Event.Reason).
const (
	reasonContended   = "contended"
	reasonSplitVote   = "split_vote"
	reasonNoQuorum    = "quorum_unreachable"
	reasonCanceled    = "canceled"
	reasonExpired     = "expired"
	reasonInvalid     = "invalid"
	reasonNotOurs     = "not_ours"
	reasonUnconfirmed = "unconfirmed"
	reasonExtendFail  = "extension_failed"
	reasonMaxHold     = "max_hold"
	reasonTookOver    = "took_over"
)

// reason says why an attempt that got no lock failed.
func (o outcome) reason() string {
	switch {
	case o.split:
		return reasonSplitVote
	case o.held:
		return reasonContended
	case errors.Is(o.err, ErrQuorumUnreachable):
		return reasonNoQuorum
	case errors.Is(o.err, ErrInvalidArgument):
		return reasonInvalid
	case errors.Is(o.err, ErrRecovering):
		return reasonRecovering
	}
	return reasonExpired // validity used up while acquiring or settling the fence
}

func (c *Client) observe(e observe.Event) {
	if c.cfg.observer != nil {
		if e.Context == nil {
			e.Context = context.Background()
		}
		c.cfg.observer.Observe(e)
	}
}

// observeNode reports one node's answer in a round.
func (c *Client) observeNode(ctx context.Context, key string, i int, op string, err error, took time.Duration) {
	if c.cfg.observer != nil {
		c.observe(observe.Event{Kind: observe.Node, Key: key, Node: c.nodes[i].Name(), Op: op, Latency: took, Err: err, Context: ctx})
	}
}
