package redlock

// Split votes on memory nodes: a silent node, a lost split and a given-up
// wait on synctest's fake clock (what the calls wait for is exact here,
// independent of the machine), and the split-vote jitter.

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/retry"
)

// stallCounter is a slog handler that counts the stall guard's firings in
// rounds of one op.
type stallCounter struct {
	op string
	n  *atomic.Int64
}

func (h stallCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h stallCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h stallCounter) WithGroup(string) slog.Handler            { return h }
func (h stallCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != stallGuardFired {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "op" && a.Value.String() == h.op {
			h.n.Add(1)
		}
		return true
	})
	return nil
}

// Two contenders split a free key 2-2 on the four live nodes of five (each
// reaches two nodes first), and the fifth node never answers. Every round
// of single attempts has exactly one winner, no acquire round waits for the
// silent node (its stall guard never fires), and each call returns well
// within one node timeout: the split is called once the live nodes
// answered, and the split sleeps scale with their replies, not with the
// silent node's timeout.
func TestSplitWithSilentNodeResolvesWithinNodeTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout, reach = time.Second, 10 * time.Millisecond
		ms := memNodes(5)
		block := make(chan struct{})
		var stalls, splits atomic.Int64
		clients := make([]*Client, 2)
		for c := range clients {
			nodes := asNodes(ms)
			for i := range 4 {
				if i/2 != c { // client 0 reaches nodes 0 and 1 first, client 1 nodes 2 and 3
					nodes[i] = late{Node: ms[i], delay: reach}
				}
			}
			nodes[4] = stuck{Node: ms[4], release: block}
			clients[c] = mustNew(t, nodes, WithNodeTimeout(nodeTimeout),
				WithLogger(slog.New(stallCounter{op: "acquire", n: &stalls})),
				WithObserver(observe.Func(func(e observe.Event) {
					if e.Kind == observe.Contended && e.Reason == reasonSplitVote {
						splits.Add(1)
					}
				})))
		}
		const rounds = 5
		for r := range rounds {
			key := "job-" + string(rune('a'+r))
			locks := make([]*Lock, len(clients))
			errs := make([]error, len(clients))
			took := make([]time.Duration, len(clients))
			var wg sync.WaitGroup
			for c, cl := range clients {
				wg.Go(func() {
					began := time.Now()
					locks[c], errs[c] = cl.TryAcquire(context.Background(), key, 10*time.Second)
					took[c] = time.Since(began)
				})
			}
			wg.Wait()
			won := 0
			for c, l := range locks {
				if l != nil {
					won++
				} else if !errors.Is(errs[c], ErrNotAcquired) {
					t.Fatalf("round %d: client %d: %v", r, c, errs[c])
				}
				if took[c] >= nodeTimeout {
					t.Errorf("round %d: client %d took %s (node timeout %s): it waited for the silent node", r, c, took[c], nodeTimeout)
				}
			}
			t.Logf("round %d: took %v, errs %v", r, took, errs)
			if won != 1 {
				t.Fatalf("round %d: %d winners, want exactly 1: %v", r, won, errs)
			}
			for _, l := range locks {
				if l != nil {
					_ = l.Release(context.Background())
				}
			}
		}
		if n := stalls.Load(); n != 0 {
			t.Errorf("the stall guard fired in %d acquire rounds: they waited for the silent node", n)
		}
		if splits.Load() < rounds {
			t.Errorf("%d split votes in %d rounds: the rounds did not split", splits.Load(), rounds)
		}
		close(block)
		for _, cl := range clients {
			_ = cl.Close()
		}
	})
}

// TryAcquire tells "the split-vote rounds ran out" (ErrSplitVote, which is
// also ErrNotAcquired) from "another holder has it" (ErrNotAcquired only),
// and so does Acquire when its last attempts split the votes.
func TestSplitVoteGivesUpWithErrSplitVote(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(4)
		ctx := context.Background()
		// Another client holds "split" on two of the four nodes (its own
		// cluster is those two) and "held" on three.
		two := mustNew(t, asNodes(ms[:2]))
		three := mustNew(t, asNodes(ms[:3]))
		if _, err := two.TryAcquire(ctx, "split", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := three.TryAcquire(ctx, "held", time.Minute); err != nil {
			t.Fatal(err)
		}
		c := mustNew(t, asNodes(ms), WithRetry(retry.Constant(2, 10*time.Millisecond, 0)))
		_, err := c.TryAcquire(ctx, "split", 10*time.Second)
		if !errors.Is(err, ErrSplitVote) || !errors.Is(err, ErrNotAcquired) {
			t.Errorf("2 of 4 nodes another's, 2 ours: err = %v, want ErrSplitVote and ErrNotAcquired", err)
		}
		_, err = c.Acquire(ctx, "split", 10*time.Second)
		if !errors.Is(err, ErrSplitVote) || !errors.Is(err, ErrNotAcquired) {
			t.Errorf("Acquire, 2 of 4 nodes another's: err = %v, want ErrSplitVote and ErrNotAcquired", err)
		}
		_, err = c.TryAcquire(ctx, "held", 10*time.Second)
		if !errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrSplitVote) {
			t.Errorf("3 of 4 nodes another's: err = %v, want ErrNotAcquired without ErrSplitVote", err)
		}
		for _, cl := range []*Client{c, two, three} {
			_ = cl.Close()
		}
	})
}

// lagging delays every acquire by delay before it runs, the reply of its
// first acquire by firstReply after it ran, and every release by release
// before it runs.
type lagging struct {
	Node
	delay, firstReply, release time.Duration
	replied                    *atomic.Bool
}

func (l lagging) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	time.Sleep(l.delay)
	r, err := l.Node.Acquire(ctx, a)
	if l.replied.CompareAndSwap(false, true) {
		time.Sleep(l.firstReply)
	}
	return r, err
}

func (l lagging) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	time.Sleep(l.release)
	return l.Node.Release(ctx, a)
}

// An attempt that lost a split while its token was landing on a majority
// (the split was called before the slow replies came) deletes that token in
// the background; the next attempt of the same call, finding it still on
// those nodes, does not take it for another holder: TryAcquire goes on
// resolving and takes the lock once the deletes landed, instead of
// reporting it held by the token it gave up.
func TestSplitDoesNotCountTheCallsOwnGivenUpToken(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		ctx := context.Background()
		other := mustNew(t, asNodes(ms[3:])) // holds "k" on nodes 3 and 4
		if _, err := other.TryAcquire(ctx, "k", time.Minute); err != nil {
			t.Fatal(err)
		}
		nodes := asNodes(ms)
		for i := range 3 {
			l := lagging{Node: ms[i], delay: 2 * time.Millisecond, release: 40 * time.Millisecond, replied: new(atomic.Bool)}
			if i > 0 { // the first replies of nodes 1 and 2 come after the split is called
				l.firstReply = 30 * time.Millisecond
			}
			nodes[i] = l
		}
		for i := 3; i < 5; i++ { // the other holder's nodes answer last
			nodes[i] = late{Node: ms[i], delay: 3 * time.Millisecond}
		}
		c := mustNew(t, nodes, WithNodeTimeout(100*time.Millisecond))
		l, err := c.TryAcquire(ctx, "k", 10*time.Second)
		if err != nil {
			t.Fatalf("nodes 0-2 free but for this call's own given-up token: %v", err)
		}
		_ = l.Release(ctx)
		_ = c.Close()
		_ = other.Close()
	})
}

// The split-vote jitter follows crypto/rand, so a test that fixes
// crypto/rand's source (as locktest's schedules do) fixes it too: two runs
// from one seed draw the same delays, within [0, n).
func TestSplitJitterIsFixedByCryptotestSeed(t *testing.T) {
	const n = 3 * time.Millisecond
	draw := func(seed uint64) []time.Duration {
		var ds []time.Duration
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			for range 16 {
				ds = append(ds, splitJitter(n))
			}
		})
		return ds
	}
	a, b := draw(7), draw(7)
	if !slices.Equal(a, b) {
		t.Fatalf("two runs from one seed drew %v and %v", a, b)
	}
	for _, d := range a {
		if d < 0 || d >= n {
			t.Fatalf("drew %v, want within [0, %v)", d, n)
		}
	}
	if slices.Equal(a, draw(8)) {
		t.Fatalf("seeds 7 and 8 drew the same %v", a)
	}
	if splitJitter(0) != 0 || splitJitter(-time.Second) != 0 {
		t.Fatal("a jitter of nothing is not 0")
	}
}

// The split-vote jitter's cost against math/rand/v2's, which it replaced:
// a split is resolved after a round trip, so a draw under a microsecond
// does not count.
func BenchmarkSplitJitter(b *testing.B) {
	const n = 1500 * time.Microsecond
	b.Run("crypto-rand", func(b *testing.B) {
		for b.Loop() {
			_ = splitJitter(n)
		}
	})
	b.Run("math-rand-v2", func(b *testing.B) {
		for b.Loop() {
			_ = rand.N(n)
		}
	})
}

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
		name := c.cfg.keyName("job")
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
