package recovery

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// counting is a memory node that counts its Learn calls.
type counting struct {
	*memnode.Node
	learns atomic.Int32
}

func (c *counting) Learn(ctx context.Context, a node.LearnArgs) (node.Standing, error) {
	c.learns.Add(1)
	return c.Node.Learn(ctx, a)
}

// A watched learner is asked every half step until it votes, at its
// clock's rate, and then no more; Stop ends the asking at once.
func TestKeeperStepsALearnerUntilItVotes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := &counting{Node: memnode.New("n")}
		k := NewKeeper([]node.Node{n}, 10*time.Second, time.Second)
		defer k.Stop()
		s, err := n.Learn(t.Context(), node.LearnArgs{Name: "k", Recovery: 10 * time.Second})
		if err != nil || !Learning(s) {
			t.Fatalf("a new node: %+v, %v; want learning", s, err)
		}
		k.Watch(0, "k", s)
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if s, _ := n.Learn(t.Context(), node.LearnArgs{Name: "k", Recovery: 10 * time.Second}); !Learning(s) || s.Learned < 8*time.Second {
			t.Fatalf("after 9 s of asking: %+v, want learning about 9 s", s)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		asked := n.learns.Load()
		if s, _ := n.Learn(t.Context(), node.LearnArgs{Name: "k", Recovery: 10 * time.Second}); s.Voting != true {
			t.Fatalf("after the period: %+v, want voting", s)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := n.learns.Load(); got != asked+1 {
			t.Fatalf("asked %d more times after it voted, want none", got-asked-1)
		}
	})
}

// A hold past the period is told to every node once; a hold no longer
// than the longest known, or than the period, is not told again.
func TestKeeperTellsOnlyALongerHold(t *testing.T) {
	nodes := []*counting{{Node: memnode.New("a")}, {Node: memnode.New("b")}}
	k := NewKeeper([]node.Node{nodes[0], nodes[1]}, time.Minute, time.Second)
	defer k.Stop()
	ctx := t.Context()
	for _, hold := range []time.Duration{time.Minute, time.Hour, 30 * time.Minute, time.Hour} {
		k.Tell(ctx, "k", hold)
	}
	for _, n := range nodes {
		if got := n.learns.Load(); got != 1 {
			t.Errorf("%s told %d times, want once (the hour)", n.Name(), got)
		}
		if s, _ := n.Learn(ctx, node.LearnArgs{Name: "k", Recovery: time.Minute}); s.Hold != time.Hour {
			t.Errorf("%s keeps a hold of %s, want 1h", n.Name(), s.Hold)
		}
	}
	if k.Hold.Get() != time.Hour {
		t.Fatalf("the keeper knows a hold of %s, want 1h", k.Hold.Get())
	}
}
