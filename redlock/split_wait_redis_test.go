package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// refusingNode fails every lock request at once: a node the client cannot
// reach.
type refusingNode struct{ node.Node }

var errRefusingNode = errors.New("connection refused")

func (refusingNode) Acquire(context.Context, node.AcquireArgs) (node.AcquireReply, error) {
	return node.AcquireReply{}, errRefusingNode
}

func (refusingNode) Release(context.Context, node.ReleaseArgs) (bool, error) {
	return false, errRefusingNode
}

// On five real redis-server nodes: a holder that never releases (its
// client froze) has the key on two, one node refuses, and the waiter's
// attempts split the votes until it gives the split up. It must take the
// lock once the holder's keys expire (3 s), not sleep its retry delay of
// ten minutes: the context's minute is only a hang guard.
func TestSplitGivenUpAcquiresAfterHolderExpiry(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 5)
	nodes := nodesOf(cl)
	nodes[2] = refusingNode{nodes[2]}
	var splits atomic.Int32
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(0),
		redlock.WithRetry(retry.Constant(3, 10*time.Minute, 0)),
		redlock.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Contended && e.Reason == "split_vote" {
				splits.Add(1)
			}
		})))
	key := uniqueKey(t)
	setOn(t, cl, c.KeyName(key), "frozen-holder", 3*time.Second, 0, 1)
	l, err := c.Acquire(ctxFor(t), key, 5*time.Second)
	if err != nil {
		t.Fatalf("Acquire after %d split attempts: %v (it slept its retry delay past the holder's expiry)", splits.Load(), err)
	}
	_ = l.Release(context.Background())
	if splits.Load() <= 8 {
		t.Fatalf("%d split attempts: the waiter never gave a split up (the scenario is broken)", splits.Load())
	}
}
