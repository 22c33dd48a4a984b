package redlock

// How long a waiter sleeps after it gave up resolving a split, on
// synctest's fake clock: what the call waits for is exact here.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/retry"
)

// refusing is a node whose lock requests fail at once (a node the client
// cannot reach).
type refusing struct{ node.Node }

var errRefusing = errors.New("connection refused")

func (refusing) Acquire(context.Context, node.AcquireArgs) (node.AcquireReply, error) {
	return node.AcquireReply{}, errRefusing
}

func (refusing) Release(context.Context, node.ReleaseArgs) (bool, error) { return false, errRefusing }

// A holder whose client froze (it never releases) has the key on two of
// five nodes, one node refuses every request, and the waiter wins the
// other two: each attempt splits the votes 2-2, until the waiter gives the
// split up and counts it as a contended attempt. The nodes told it when
// the holder's keys expire, and it must look again then, not after its
// retry policy's whole delay (an hour here): a lock that expires is
// announced to nobody.
func TestSplitGivenUpWaitsUntilHolderExpires(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const holderTTL, policyDelay = 2 * time.Second, time.Hour
		ctx := context.Background()
		ms := memNodes(5)
		nodes := asNodes(ms)
		nodes[2] = refusing{ms[2]}
		var splits, attempts atomic.Int32
		c := mustNew(t, nodes, WithRetry(retry.Constant(3, policyDelay, 0)), WithRecoveryPeriod(0),
			WithObserver(observe.Func(func(e observe.Event) {
				switch {
				case e.Kind == observe.Attempt:
					attempts.Add(1)
				case e.Kind == observe.Contended && e.Reason == reasonSplitVote:
					splits.Add(1)
				}
			})))
		defer func() { _ = c.Close() }()
		name := c.keyName("job")
		for _, i := range []int{0, 1} {
			if _, err := ms[i].Acquire(ctx, node.AcquireArgs{Name: name, Token: "frozen-holder", TTL: holderTTL}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		l, err := c.Acquire(ctx, "job", time.Second)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		defer func() { _ = l.Release(ctx) }()
		if splits.Load() <= maxSplitRounds {
			t.Fatalf("%d split attempts: the waiter never gave a split up (the scenario is broken)", splits.Load())
		}
		if took := time.Since(start); took >= policyDelay {
			t.Fatalf("acquired after %s, %d attempts (%d split): the waiter slept its retry delay past the holder's expiry at %s",
				took, attempts.Load(), splits.Load(), holderTTL)
		}
	})
}
