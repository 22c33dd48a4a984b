package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
)

// identity holds what the client learnt of its nodes at first contact: the
// server behind each (so that one server under two names is not counted
// twice) and whether its eviction policy can drop lock keys.
type identity struct {
	all atomic.Bool // every node identified and accepted: the fast path

	mu      sync.Mutex
	ids     []string // per node; "" while unknown
	err     error    // sticky: a configuration the client refuses
	asking  bool     // a background identification is running
	retryAt time.Time

	names  []string     // the nodes' names, for errors and logs
	strict bool         // WithRequireNoEviction
	logger *slog.Logger // warns of evicting nodes
}

// identifyRetry is how often nodes that could not be identified are asked
// again, in the background; until then their answers do not count.
const identifyRetry = time.Second

// identifyTimeout is the least time a node has to say who it is at first
// contact, which dials new connections.
const identifyTimeout = 2 * time.Second

// ready returns nil when the client's nodes may be used. The first call
// identifies every node (one round); nodes that do not answer stay
// unidentified, their answers not counted, and are asked again in the
// background at most every identifyRetry. Two nodes that are one server,
// or an evicting node with WithRequireNoEviction, make every call fail
// with ErrInvalidArgument from then on.
func (c *Client) ready(ctx context.Context, timeout time.Duration) error {
	id := &c.ident
	if id.all.Load() {
		return nil
	}
	// First contact dials new connections: give it at least a second.
	timeout = max(timeout, identifyTimeout)
	id.mu.Lock()
	defer id.mu.Unlock()
	switch {
	case id.err != nil || id.all.Load():
		return id.err
	case id.ids == nil:
		id.ids = make([]string, len(c.nodes))
		id.accept(c.ask(ctx, c.all, timeout))
		return id.err
	case !id.asking && !time.Now().Before(id.retryAt):
		id.asking = true
		var ask []int
		for i, s := range id.ids {
			if s == "" {
				ask = append(ask, i)
			}
		}
		c.bg.goGuarded(c.logger, func() {
			got := c.ask(context.Background(), ask, timeout) // without the lock: counts must not wait
			id.mu.Lock()
			defer id.mu.Unlock()
			id.accept(got)
			id.asking = false
		})
	}
	return nil
}

// ask asks nodes who they are; the answers of those that said. It does not
// wait for silent nodes once a quorum answered.
//
// Close cancels the requests (a node's answer is no use to a closed
// client); the requests of nodes still silent when it returns end with it.
func (c *Client) ask(ctx context.Context, nodes []int, timeout time.Duration) []quorum.Answer[node.Identity] {
	ctx, stop := c.closing.until(ctx)
	defer stop()
	r := startRound(c, ctx, opIdentify, "", nodes, timeout, func(ctx context.Context, n node.Node) (node.Identity, error) {
		return n.Identify(ctx)
	})
	defer r.Close()
	var got []quorum.Answer[node.Identity]
	t := quorum.NewTally(len(c.nodes))
	count := func(a quorum.Answer[node.Identity]) error {
		if a.Err == nil && a.Val.ID != "" {
			t.Granted++
			got = append(got, a)
		}
		return nil
	}
	for !t.Won() {
		a, ok := r.Next()
		if !ok {
			return got
		}
		_ = count(a)
	}
	// Enough to work with: the others get a moment (as long again as these
	// took), then are asked again in the background, and their answers do
	// not count until they say who they are.
	r.CollectWithin(max(time.Since(r.Began()), time.Millisecond), count, false)
	return got
}

// accept records identities, refusing duplicates and, with
// WithRequireNoEviction, evicting servers. Called with id.mu held.
func (id *identity) accept(got []quorum.Answer[node.Identity]) {
	id.retryAt = time.Now().Add(identifyRetry)
	for _, a := range got {
		name := id.names[a.Node]
		for j, other := range id.ids {
			if other == a.Val.ID && j != a.Node {
				id.err = invalidArg("nodes %q and %q are the same server (id %s); a quorum needs independent servers", id.names[j], name, a.Val.ID)
				return
			}
		}
		if a.Val.Eviction != "noeviction" {
			if id.strict {
				id.err = invalidArg("node %q has maxmemory-policy %q, which can evict lock keys and fence counters; set it to noeviction", name, a.Val.Eviction)
				return
			}
			id.logger.Warn("redlock: node may evict lock keys under memory pressure, which breaks mutual exclusion; set maxmemory-policy noeviction",
				"node", name, "maxmemory-policy", a.Val.Eviction)
		}
		id.ids[a.Node] = a.Val.ID
	}
	for _, s := range id.ids {
		if s == "" {
			return
		}
	}
	id.all.Store(true)
}

// identifyNow identifies node i at once, when it answered a request but
// has not said who it is (first contact did not wait for it): its answer
// then counts without waiting for the background retry. It reports whether
// node i counts; a configuration error found meanwhile is returned. It
// waits the attempt's node timeout, no more: the node just answered over
// a connection that is up, and a lost identify request had blocked the
// attempt for identifyTimeout, past a short TTL (chaos/sim seed 8830).
func (c *Client) identifyNow(ctx context.Context, i int, timeout time.Duration) (bool, error) {
	if c.ident.counts(i) {
		return true, nil
	}
	got := c.ask(ctx, []int{i}, timeout)
	id := &c.ident
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.err == nil {
		id.accept(got)
	}
	return id.err == nil && id.ids[i] != "", id.err
}

// counts reports whether node i's answers may count toward a quorum: it
// was identified as a server distinct from the others.
func (id *identity) counts(i int) bool {
	if id.all.Load() {
		return true
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.ids != nil && id.ids[i] != ""
}

// errUnidentified is the failure recorded for the answer of a node that
// does not count yet.
func errUnidentified(name string) error {
	return fmt.Errorf("node %s not identified yet (it did not say which server it is); its answer does not count", name)
}
