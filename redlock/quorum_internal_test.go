package redlock

// The quorum round's decision rules on memory nodes, on synctest's fake
// clock: what a call waits for is exact here, independent of the machine.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/internal/identity"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/retry"
)

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
// the node timeout plus quorum.StallGrace, not later, even if the nodes never
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
		if d := time.Since(start); d != time.Second+quorum.StallGrace {
			t.Fatalf("gave up after %s, want the node timeout + %s", d, quorum.StallGrace)
		}
		var ne *NodeError
		if !errors.As(err, &ne) || !errors.Is(err, quorum.ErrNoAnswer) {
			t.Fatalf("no NodeError for the silent nodes in %v", err)
		}
		close(block)
		_ = c.Close()
		for i, m := range ms {
			if h, _ := m.Inspect(context.Background(), c.cfg.keyName("k")); h.Token != "" {
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
			if h, _ := ms[i].Inspect(ctx, c.cfg.keyName("k")); h.Token != "" {
				t.Fatalf("node %d still holds the lost attempt's token after Close: %+v", i, h)
			}
		}
		_ = l.Release(ctx)
		_ = holder.Close()
	})
}

// A yes that does not count is a failure of its node, with the reason, and
// the tally's error wraps ErrQuorumUnreachable and every node's failure.
func TestTallyErrorWrapsEveryNodeFailure(t *testing.T) {
	t.Parallel()
	tl := quorum.NewTally(3)
	tl.Fail(&NodeError{Node: "a", Op: "acquire", Err: quorum.ErrNoAnswer})
	tl.Fail(&NodeError{Node: "b", Op: "acquire", Err: identity.Unidentified("b")})
	err := errUnreachable(&tl, `acquire "k"`)
	if !errors.Is(err, ErrQuorumUnreachable) || !errors.Is(err, quorum.ErrNoAnswer) {
		t.Fatalf("err = %v: want ErrQuorumUnreachable wrapping the node failures", err)
	}
	var ne *NodeError
	if !errors.As(err, &ne) || ne.Node != "a" {
		t.Fatalf("errors.As NodeError = %+v", ne)
	}
	if !strings.Contains(err.Error(), `acquire "k": 2 of 3 nodes failed`) || !strings.Contains(err.Error(), "node b: acquire") {
		t.Fatalf("err = %q", err)
	}
	if !tl.Unreachable() {
		t.Fatal("two of three nodes failed (one yes not counted): want unreachable")
	}
}
