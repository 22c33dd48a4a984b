package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

var errUndoRefused = errors.New("release refused")

// refusingRelease acquires like the node it wraps, and fails every
// release: the undo of a failed attempt cannot reach it.
type refusingRelease struct{ node.Node }

func (refusingRelease) Release(context.Context, node.ReleaseArgs) (bool, error) {
	return false, errUndoRefused
}

// A failed attempt's undo that does not reach a node is reported to the
// observer (observe.UndoFailed, naming the node and its failure): the key
// it leaves there until its TTL ends shows in metrics.
func TestUndoFailedIsObserved(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	nodes := nodesOf(cl)
	nodes[0] = refusingRelease{nodes[0]}
	rec := &recorder{}
	c := newClient(t, nodes, redlock.WithObserver(rec), redlock.WithNodeTimeout(testNodeTimeout))
	key := uniqueKey(t)
	// Another token holds nodes 1 and 2: our attempt gets node 0 alone,
	// fails, and its undo must delete our key on node 0.
	setOn(t, cl, lockName(key), "someone-else", 10*time.Second, 1, 2)
	if _, err := c.TryAcquire(ctxFor(t), key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire with the key held on 2 of 3 nodes: %v", err)
	}
	_ = c.Close() // waits for the undo
	got := rec.of(key, observe.UndoFailed, "")
	if len(got) != 1 || got[0].Node != nodes[0].Name() || !errors.Is(got[0].Err, errUndoRefused) {
		t.Fatalf("observe.UndoFailed events %+v; want one for node %s wrapping the refusal", got, nodes[0].Name())
	}
	if got := holders(t, cl, lockName(key))[0]; got == "" {
		t.Error("node 0 has no key: the undo was not refused")
	}
}
