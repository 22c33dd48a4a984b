package locktest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// Quorum is a set of memory nodes that a test controls, and the clients
// over them. Make it inside a testing/synctest bubble to run on the
// bubble's fake clock (then make its clients there too), or outside one to
// run on real time.
type Quorum struct {
	t     TB
	nodes []*Node

	mu      sync.Mutex
	clients map[*redlock.Client]int // number of each client, for CutOff
	admin   *redlock.Client         // over the servers, past every fault but Stop
}

// NewQuorum returns n memory nodes, named node-1 to node-n. When the test
// ends, after its clients closed, every fault but a Stop or clock jump ends,
// and the requests held back land before the test returns.
func NewQuorum(t TB, n int) *Quorum {
	t.Helper()
	if n < 1 {
		t.Fatalf("locktest: a quorum needs at least one node, not %d", n)
	}
	q := &Quorum{t: t, clients: map[*redlock.Client]int{}}
	for i := range n {
		q.nodes = append(q.nodes, newNode(q, fmt.Sprintf("node-%d", i+1)))
	}
	t.Cleanup(func() {
		for _, nd := range q.nodes {
			nd.healAll()
		}
		for _, nd := range q.nodes {
			nd.late.Wait() // a delay still running: at most one Slow
		}
	})
	return q
}

// Node returns node i (from 0). An i out of range fails the test and
// returns nil.
func (q *Quorum) Node(i int) *Node {
	if i < 0 || i >= len(q.nodes) {
		q.t.Helper()
		q.t.Fatalf("locktest: no node %d in a quorum of %d", i, len(q.nodes))
		return nil
	}
	return q.nodes[i]
}

// Nodes returns every node, in the order the clients know them.
func (q *Quorum) Nodes() []*Node { return append([]*Node(nil), q.nodes...) }

// Client returns a new client over the nodes, each reached through its own
// link (so that a node can be cut off from one client). It is closed when
// the test ends. Invalid options fail the test.
func (q *Quorum) Client(opts ...redlock.Option) *redlock.Client {
	q.t.Helper()
	q.mu.Lock()
	id := len(q.clients) + 1
	q.mu.Unlock()
	links := make([]node.Node, len(q.nodes))
	for i, nd := range q.nodes {
		links[i] = &link{srv: nd, id: id}
	}
	c, err := redlock.New(links, opts...)
	if err != nil {
		q.t.Fatalf("locktest: %v", err)
		return nil
	}
	q.t.Cleanup(func() { _ = c.Close() })
	q.mu.Lock()
	q.clients[c] = id
	q.mu.Unlock()
	return c
}

func (q *Quorum) clientID(c *redlock.Client) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	id, ok := q.clients[c]
	return id, ok
}

// LoseMajority stops the first len/2+1 nodes (Node.Stop): no majority is left.
// A holder cannot extend its lock, and a kept lock is declared lost before
// its validity ends. Restore undoes it.
func (q *Quorum) LoseMajority() {
	for _, nd := range q.nodes[:quorum.Of(len(q.nodes))] {
		nd.Stop()
	}
}

// Restore starts every node and ends every fault on it but a clock jump.
func (q *Quorum) Restore() {
	for _, nd := range q.nodes {
		nd.Start()
		nd.healAll()
	}
}

// name is key's name on the nodes, for clients with the default prefix.
func name(key string) string { return defaults.KeyPrefix + "{" + key + "}" }

// ExpireNow ends the lock of key (the token held on most nodes) on every
// running node now, as when its holder stalled past its TTL and someone
// else held the key since: the key is deleted and its holder's token
// refused from then on (so it cannot put the key back), while the fence
// counter stays. Another client can take the
// lock at once; the holder learns of the loss at its next extension (Extend
// returns ErrLockLost; a kept lock's Done closes, and Do's context is
// cancelled). Keys are named as by clients with the default key prefix.
func (q *Quorum) ExpireNow(key string) {
	ctx := context.Background()
	votes := map[string]int{}
	var longest time.Duration
	for _, nd := range q.nodes {
		if h, err := nd.mem.Inspect(ctx, name(key)); err == nil && h.Token != "" {
			votes[h.Token]++
			longest = max(longest, h.TTL)
		}
	}
	// The token on most nodes is refused on every node, also where its
	// request has not landed yet: it cannot land later.
	token, most := "", 0
	for tok, n := range votes {
		if n > most || n == most && tok < token {
			token, most = tok, n
		}
	}
	if token == "" {
		return
	}
	for _, nd := range q.nodes {
		// A stopped node keeps the key, as a crashed server would.
		_, _ = nd.mem.ForceRelease(ctx, node.ForceReleaseArgs{Name: name(key), Token: token,
			Tombstone: longest + time.Minute})
	}
}

// Evict force-releases the lock of key as an operator does with
// Client.ForceRelease (the fence counter raised, the holder's token refused,
// the release announced), past every fault but a Stop. It returns the
// evicted holder; a failure fails the test.
func (q *Quorum) Evict(key string) redlock.Info {
	q.t.Helper()
	admin := q.adminClient()
	if admin == nil {
		return redlock.Info{}
	}
	info, err := admin.ForceRelease(context.Background(), key, "")
	if err != nil {
		q.t.Errorf("locktest: evict %q: %v", key, err)
	}
	return info
}

// Inspect reports who holds key, past every fault but a Stop.
func (q *Quorum) Inspect(key string) redlock.Info {
	q.t.Helper()
	admin := q.adminClient()
	if admin == nil {
		return redlock.Info{}
	}
	info, err := admin.Inspect(context.Background(), key)
	if err != nil {
		q.t.Errorf("locktest: inspect %q: %v", key, err)
	}
	return info
}

func (q *Quorum) adminClient() *redlock.Client {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.admin == nil {
		nodes := make([]node.Node, len(q.nodes))
		for i, nd := range q.nodes {
			nodes[i] = nd.mem
		}
		c, err := redlock.New(nodes)
		if err != nil { // the nodes are distinct and not nil: only a future check fails here
			q.t.Fatalf("locktest: %v", err)
			return nil
		}
		q.t.Cleanup(func() { _ = c.Close() })
		q.admin = c
	}
	return q.admin
}
