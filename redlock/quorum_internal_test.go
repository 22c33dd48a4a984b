package redlock

// The quorum round's decision rules on memory nodes, on synctest's fake
// clock: what a call waits for is exact here, independent of the machine.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/retry"
)

// stuck answers nothing until released, whatever the context says: a
// server that went silent behind a client that ignores deadlines.
type stuck struct {
	Node
	release chan struct{}
}

func (s stuck) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	<-s.release
	return node.AcquireReply{}, errors.New("released late")
}

func (s stuck) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	<-s.release
	return false, errors.New("released late")
}

// late delays every request by delay: a node far away.
type late struct {
	Node
	delay time.Duration
}

func (l late) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	time.Sleep(l.delay)
	return l.Node.Acquire(ctx, a)
}

func memNodes(n int) []*memnode.Node {
	out := make([]*memnode.Node, n)
	for i := range out {
		out[i] = memnode.New(string(rune('a' + i)))
	}
	return out
}

func asNodes(ms []*memnode.Node) []node.Node {
	out := make([]node.Node, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func mustNew(t *testing.T, nodes []node.Node, opts ...Option) *Client {
	t.Helper()
	c, err := New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A silent node delays neither a won nor a lost attempt: both are decided
// by the other nodes at once; the stall guard only bounds the background.
func TestRoundDecidesWithoutSilentNode(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		nodes := asNodes(ms)
		block := make(chan struct{})
		nodes[4] = stuck{Node: ms[4], release: block}
		// Without recovery: a key in its first recovery period gives the
		// other nodes a moment (see TestFreshKeyWaitsAMomentForTheOtherNodes).
		c := mustNew(t, nodes, WithNodeTimeout(time.Second), WithRecoveryPeriod(0))
		ctx := context.Background()
		// First contact: the stuck node's Identify answers (only its
		// acquire and release are stuck).
		start := time.Now()
		l, err := c.TryAcquire(ctx, "k", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("a won attempt waited %s for the silent node", d)
		}
		other := mustNew(t, nodes, WithNodeTimeout(time.Second), WithRecoveryPeriod(0))
		start = time.Now()
		_, err = other.TryAcquire(ctx, "k", 10*time.Second)
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("err = %v, want ErrNotAcquired", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("a lost attempt waited %s for the silent node", d)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		// Close waits for what is in flight: the stuck calls are cut by
		// nothing but their answer, so release them first.
		close(block)
		_ = c.Close()
		_ = other.Close()
	})
}

// The stall guard: when a majority cannot answer, the call fails after
// the node timeout plus stallGrace, not later, even if the nodes never
// answer; each silent node is one NodeError.
func TestRoundStallGuard(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(3)
		nodes := asNodes(ms)
		block := make(chan struct{})
		nodes[1] = stuck{Node: ms[1], release: block}
		nodes[2] = stuck{Node: ms[2], release: block}
		c := mustNew(t, nodes, WithNodeTimeout(time.Second))
		start := time.Now()
		_, err := c.TryAcquire(context.Background(), "k", 10*time.Second)
		if !errors.Is(err, ErrQuorumUnreachable) {
			t.Fatalf("err = %v, want ErrQuorumUnreachable", err)
		}
		if d := time.Since(start); d != time.Second+stallGrace {
			t.Fatalf("gave up after %s, want the node timeout + %s", d, stallGrace)
		}
		var ne *NodeError
		if !errors.As(err, &ne) || !errors.Is(err, errNoAnswer) {
			t.Fatalf("no NodeError for the silent nodes in %v", err)
		}
		close(block)
		_ = c.Close()
		for i, m := range ms {
			if h, _ := m.Inspect(context.Background(), c.keyName("k")); h.Token != "" {
				t.Fatalf("node %d kept the failed attempt's key", i)
			}
		}
	})
}

// Three replicas whose requests reach the nodes in an order that splits
// the votes 2-2-1: exactly one of them gets the lock, and the others are
// told it is held, within a few rounds of the fake clock.
func TestRoundSplitVoteResolved(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		synctest.Test(t, func(t *testing.T) {
			ms := memNodes(5)
			clients := make([]*Client, 3)
			for c := range clients {
				nodes := make([]node.Node, 5)
				for i, m := range ms {
					// Client c reaches node i after ((i-2c) mod 5) ms.
					nodes[i] = late{Node: m, delay: time.Duration((i-2*c+10)%5) * time.Millisecond}
				}
				clients[c] = mustNew(t, nodes, WithNodeTimeout(time.Second), WithRetry(retry.Never()))
			}
			var wg sync.WaitGroup
			locks := make([]*Lock, 3)
			errs := make([]error, 3)
			for c, cl := range clients {
				wg.Go(func() { locks[c], errs[c] = cl.TryAcquire(context.Background(), "job", 10*time.Second) })
			}
			wg.Wait()
			held := 0
			for c, l := range locks {
				switch {
				case l != nil:
					held++
				case !errors.Is(errs[c], ErrNotAcquired):
					t.Fatalf("round %d: client %d: %v", round, c, errs[c])
				}
			}
			if held != 1 {
				t.Fatalf("round %d: %d holders, want exactly 1: %v", round, held, errs)
			}
			for _, cl := range clients {
				_ = cl.Close()
			}
		})
	}
}

// A lost attempt's undo runs in the background; Close waits for it, and
// then no node holds the failed token.
func TestRoundUndoFinishesBeforeClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		holder := mustNew(t, asNodes(ms))
		ctx := context.Background()
		// The holder takes nodes 0-2 only: nodes 3 and 4 are down for it.
		ms[3].SetDown(true, false)
		ms[4].SetDown(true, false)
		l, err := holder.TryAcquire(ctx, "k", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the holder's requests to nodes 3 and 4 have failed
		ms[3].SetDown(false, false)
		ms[4].SetDown(false, false)
		c := mustNew(t, asNodes(ms))
		if _, err := c.TryAcquire(ctx, "k", 10*time.Second); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("err = %v", err)
		}
		_ = c.Close()
		for i := 3; i < 5; i++ {
			if h, _ := ms[i].Inspect(ctx, c.keyName("k")); h.Token != "" {
				t.Fatalf("node %d still holds the lost attempt's token after Close: %+v", i, h)
			}
		}
		_ = l.Release(ctx)
		_ = holder.Close()
	})
}

// Once a client's subscriptions are up, an Acquire of a free key does not
// wait for them again (a regression: every Acquire after the first waited
// a whole node timeout).
func TestAcquireWaitsForSubscriptionsOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := mustNew(t, asNodes(memNodes(3)), WithNodeTimeout(time.Second))
		ctx := context.Background()
		for i := range 3 {
			start := time.Now()
			l, err := c.Acquire(ctx, "k", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 0 {
				t.Fatalf("Acquire %d of a free key took %s", i, d)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.Close()
	})
}

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
