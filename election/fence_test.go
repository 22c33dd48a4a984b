package election_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
)

// lateAnswerNode performs an acquire at once but holds its answer until
// gate closes (or the request's context ends): a grant that arrives after
// the term was decided without it.
type lateAnswerNode struct {
	Node
	gate chan struct{}
}

func (g lateAnswerNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := g.Node.Acquire(context.WithoutCancel(ctx), a)
	select {
	case <-g.gate:
		return r, err
	case <-ctx.Done():
		return node.AcquireReply{}, ctx.Err()
	}
}

// A look that begins after Campaign returned reports at least the term's
// fence, even when the nodes' counters drifted apart and the look cannot
// read the node that counted it: node 0 counted far more than nodes 1 and
// 2; the term is decided on nodes 0 and 1 (node 2's grant comes late), so
// its fence is node 0's count, and Campaign returns once node 1 was raised
// to it. Node 0 then dies, and the look reads nodes 1 and 2.
func TestLeaderFenceAfterCampaignWithDriftingCounters(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	name := uniqueName(t)
	real := nodesOf(cl)
	counter := electionCounterKey(t, ctx, cl, name)
	for i, count := range []int{1_000_000, 100, 100} {
		if err := cl.Clients()[i].Set(ctx, counter, count, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	gate := make(chan struct{})
	candidate := newElection(t, newClient(t, []node.Node{real[0], real[1], lateAnswerNode{real[2].(Node), gate}}), name)
	term, err := candidate.Campaign(ctx, "leader")
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(ctx)
	if term.Fence() <= 1_000_000 {
		t.Fatalf("term fence %d, want node 0's count (decided on nodes 0 and 1)", term.Fence())
	}
	if err := cl.Nodes()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	watcher := newElection(t, newClient(t, nodesOf(cl)), name)
	l, err := watcher.Leader(ctx)
	if err != nil || l.Value != "leader" || l.Fence < term.Fence() {
		t.Fatalf("Leader = %+v, %v; want leader with fence >= %d", l, err, term.Fence())
	}
}

// electionCounterKey finds the key that holds the fence counter of election
// name on the nodes (its lock key's record): a first term creates it.
func electionCounterKey(t *testing.T, ctx context.Context, cl *redistest.Cluster, name string) string {
	t.Helper()
	e := newElection(t, newClient(t, nodesOf(cl)), name)
	term, err := e.Campaign(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	// The counter is in the lock key's record, "count" once released: a
	// count written there is a counter.
	all, err := cl.Clients()[0].Keys(ctx, "*}").Result()
	var keys []string
	for _, k := range all {
		if strings.Contains(k, name) {
			keys = append(keys, k)
		}
	}
	if err != nil || len(keys) != 1 {
		t.Fatalf("lock keys of %q: %v, %v", name, keys, err)
	}
	return keys[0]
}
