package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// Info is what the nodes say about a lock: the answer of Client.Inspect
// and ForceRelease, an item of Client.Locks, and the previous holder of
// Lock.TookOver. In the quorum view (Node empty) the fields say what a
// majority of the nodes says, and Nodes has one Info per node; in a node's
// Info they say what that node says.
type Info struct {
	Key  string // as the caller names it, without the client's prefix
	Node string // a node's Info: the node's name; "" in the quorum view

	// Held: one token holds the key on a majority of the nodes (a node's
	// Info: on this node).
	Held bool
	// Holder names the holder's token without revealing it: its
	// node.ReleaseID, the same on every node.
	Holder     string
	Owner      string    // the holder's WithOwner; "" when not recorded
	AcquiredAt time.Time // when the holder's winning attempt started, by its clock
	// Fence is the largest fence counter the nodes reported: while a lock
	// is held, at least its holder's fence (larger when a node that
	// answered the acquisition late counted higher, or after attempts
	// that lost a split vote). TookOver's Info: see TookOver.
	Fence uint64
	// Remaining is how long a majority keeps the key (the quorum view:
	// the majority-th largest TTL among the holder's nodes), or the key's
	// TTL on the node; the holder's own validity ends before it.
	Remaining time.Duration

	// Agree (quorum view): every node answered and all say the same
	// (the same holder, or all free).
	Agree bool
	Nodes []Info // quorum view: per node, in the order of New's nodes
	Err   error  // a node's Info: its failure (the other fields are empty)

	// A node's Info from Inspect: DataAge is how long the node has kept
	// data for the key, by its clock (zero when it has no marker for it).
	// Recovering is how long it still sits out of acquisitions of the key
	// because it lost its data (see WithRecoveryPeriod); zero when it
	// counts.
	DataAge, Recovering time.Duration
}

// adminTimeout bounds each node's answer in Inspect, ForceRelease and
// Locks, which have no lock TTL to derive it from: WithNodeTimeout, or
// 1s.
func (c *Client) adminTimeout() time.Duration {
	if c.cfg.nodeTimeout > 0 {
		return c.cfg.nodeTimeout
	}
	return maxNodeTimeout
}

// Inspect reports who holds key, changing nothing: one round to every node
// (Node.Inspect), waiting for each answer up to the node timeout
// (WithNodeTimeout, default 1s). The Info says whether a majority holds
// it, the holder's owner, acquisition time and fence, how long a majority
// keeps it, whether all nodes agree, and each node's view.
//
// Errors: ErrInvalidArgument for a bad key; ErrQuorumUnreachable when too
// many nodes failed for a majority to answer; ctx's error.
func (c *Client) Inspect(ctx context.Context, key string) (Info, error) {
	if err := checkKey(ctx, key); err != nil {
		return Info{}, err
	}
	info, _, err := c.inspect(ctx, key, c.adminTimeout())
	return info, err
}

// inspect is Inspect that also returns the holder's token.
func (c *Client) inspect(ctx context.Context, key string, timeout time.Duration) (Info, string, error) {
	if err := c.ready(ctx, timeout); err != nil {
		return Info{}, "", err
	}
	name := c.keyName(key)
	r := startRound(c, ctx, "inspect", key, nil, timeout, func(ctx context.Context, nd node.Node) (node.Holding, error) {
		in, ok := nd.(node.Inspector)
		if !ok {
			return node.Holding{}, unsupported(nd, "inspect")
		}
		return in.Inspect(ctx, name)
	})
	defer r.close()
	holdings := make([]node.Holding, len(c.nodes))
	info := Info{Key: key, Nodes: make([]Info, len(c.nodes))}
	t := c.newTally()
	// The nodes left once only failing ones are (see health.go) and a
	// majority answered are not waited for, a node timeout each.
	err := r.collect(&t, collectRules{}, func(a answer[node.Holding]) error {
		ni := &info.Nodes[a.node]
		ni.Key = key
		return c.inspected(ctx, &t, ni, &holdings[a.node], a, timeout)
	})
	if err != nil {
		return Info{}, "", err
	}
	for i := range info.Nodes {
		if ni := &info.Nodes[i]; ni.Node == "" { // presumed failing
			ni.Key, ni.Node = key, c.nodes[i].Name()
			ni.Err = &NodeError{Node: ni.Node, Op: "inspect", Err: errFailing}
		}
	}
	if t.unreachable() {
		if ctx.Err() != nil {
			return Info{}, "", fmt.Errorf("redlock: inspect %q: %w", key, context.Cause(ctx))
		}
		return Info{}, "", t.err(fmt.Sprintf("inspect %q", key))
	}
	c.markRecovering(info.Nodes, holdings)
	token := c.summarize(&info, holdings)
	return info, token, nil
}

// inspected records node a.node's answer in ni and h, and tallies it. An
// unidentified node is identified now, as an attempt does, rather than
// called unreadable; a configuration error found meanwhile is returned.
func (c *Client) inspected(ctx context.Context, t *tally, ni *Info, h *node.Holding, a answer[node.Holding], timeout time.Duration) error {
	ni.Node = c.nodes[a.node].Name()
	if a.err == nil && !c.counts(a.node) {
		ok, err := c.identifyNow(ctx, a.node, timeout)
		if err != nil {
			return err
		}
		if !ok {
			a.err = &NodeError{Node: ni.Node, Op: "inspect", Err: errUnidentified(ni.Node)}
		}
	}
	if a.err != nil {
		ni.Err = a.err
		t.fail(a.err)
		return nil
	}
	*h = a.val
	ni.Held, ni.Owner, ni.AcquiredAt, ni.Fence, ni.Remaining = h.Token != "", h.Owner, h.AcquiredAt, h.Fence, h.TTL
	ni.DataAge = h.DataAge
	if ni.Held {
		ni.Holder = node.ReleaseID(h.Token)
	}
	return nil
}

// summarize fills the quorum view of info from its per-node Infos and
// holdings, and returns the majority holder's token ("" when none).
func (c *Client) summarize(info *Info, holdings []node.Holding) string {
	votes := map[string]int{}
	info.Agree = true
	for i, ni := range info.Nodes {
		info.Fence = max(info.Fence, ni.Fence)
		if ni.Err != nil || holdings[i].Token != holdings[0].Token {
			info.Agree = false
		}
		if ni.Held {
			votes[holdings[i].Token]++
		}
	}
	var token string
	for t, v := range votes {
		if v >= c.quorum {
			token = t
		}
	}
	if token == "" {
		return ""
	}
	var ttls []time.Duration
	for i, ni := range info.Nodes {
		if holdings[i].Token != token {
			continue
		}
		ttls = append(ttls, ni.Remaining)
		if info.Owner == "" {
			info.Holder, info.Owner, info.AcquiredAt = ni.Holder, ni.Owner, ni.AcquiredAt
		}
	}
	info.Held, info.Holder = true, node.ReleaseID(token)
	slices.Sort(ttls)
	info.Remaining = ttls[len(ttls)-c.quorum] // the quorum-th largest
	return token
}

// unsupported is the error of a call that needs an optional capability
// (see package node) that nd lacks.
func unsupported(nd node.Node, call string) error {
	return fmt.Errorf("redlock: node %s cannot %s: %w", nd.Name(), call, errors.ErrUnsupported)
}
