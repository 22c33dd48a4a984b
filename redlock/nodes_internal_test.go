package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/retry"
)

// shy fails its first Identify: first contact goes on without it.
type shy struct {
	Node
	asked *int
}

func (s shy) Identify(ctx context.Context) (node.Identity, error) {
	if *s.asked++; *s.asked == 1 {
		return node.Identity{}, errors.New("not now")
	}
	return s.Node.Identify(ctx)
}

// A node that did not say who it is at first contact but answers an
// acquire is identified at once, and its answer counts: with two of five
// nodes held by another client, the lock needs it (a regression: under load
// such attempts ended as split votes).
func TestLateIdentifiedNodeCounts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		nodes := asNodes(ms)
		asked := 0
		nodes[4] = shy{Node: ms[4], asked: &asked}
		other := mustNew(t, asNodes(ms[:2]), WithRetry(retry.Never()))
		ctx := context.Background()
		if _, err := other.TryAcquire(ctx, "k", time.Minute); err != nil {
			t.Fatal(err)
		}
		c := mustNew(t, nodes, WithRetry(retry.Never()))
		l, err := c.TryAcquire(ctx, "k", 10*time.Second)
		if err != nil {
			t.Fatalf("3 of 5 free nodes, one identified late: %v", err)
		}
		_ = l.Release(ctx)
		_ = c.Close()
		_ = other.Close()
	})
}
