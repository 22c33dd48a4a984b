package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// lateNode answers acquires after a delay, within the node timeout.
type lateNode struct {
	Node
	delay time.Duration
}

func (l lateNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	time.Sleep(l.delay)
	return l.Node.Acquire(ctx, a)
}

// Four of five nodes lost their data; the one that kept the key answers
// last, a little after the others. The four young markers look like a new
// key: the round gives the other nodes a moment, hears the late node, and
// its old marker makes the four sit out.
func TestFreshKeyWaitsAMomentForTheOtherNodes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		nodes := asNodes(ms)
		nodes[4] = lateNode{Node: ms[4], delay: time.Millisecond}
		ctx := context.Background()
		holder := mustNew(t, nodes, WithNodeTimeout(time.Second))
		defer holder.Close()
		l, err := holder.TryAcquire(ctx, "k", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the markers age past the slack
		for _, m := range ms[:4] {
			m.SetDown(true, true)
			m.SetDown(false, false)
		}
		other := mustNew(t, nodes, WithNodeTimeout(time.Second))
		defer other.Close()
		_, err = other.TryAcquire(ctx, "k", 10*time.Second)
		var ne *NodeError
		if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, ErrRecovering) || !errors.As(err, &ne) {
			t.Fatalf("competitor after four nodes lost the held key: %v, want ErrNotAcquired naming a recovering node", err)
		}
		_ = l.Release(ctx)
	})
}
