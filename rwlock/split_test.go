package rwlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// farNode is a real node reached over a slow link: each acquisition is
// sent after a delay, so that two clients racing for a key each reach
// their near nodes first.
type farNode struct {
	*redisnode.Node
	delay time.Duration
}

func (n farNode) AcquireRW(ctx context.Context, mode node.Mode, a node.AcquireArgs) (node.AcquireReply, error) {
	t := time.NewTimer(n.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return node.AcquireReply{}, ctx.Err()
	case <-t.C:
	}
	return n.Node.AcquireRW(ctx, mode, a)
}

// nearTo returns the cluster's nodes as a client sees them when near to
// the nodes in near and far (a slow link) from the others.
func nearTo(nodes []node.Node, delay time.Duration, near ...int) []node.Node {
	out := make([]node.Node, len(nodes))
	for i, n := range nodes {
		out[i] = farNode{Node: n.(*redisnode.Node), delay: delay}
		for _, j := range near {
			if i == j {
				out[i] = n
			}
		}
	}
	return out
}

// A writer and a reader that split the nodes 2-2 (the fifth is down, and
// each is near to two nodes) resolve it as two writers do: exactly one of
// TryLock and TryRLock gets the lock in every race, and the other is told
// that it is held: neither runs out of split-vote rounds (when the writer
// was told of the literal "readers" and a reader of the writer's id, each
// could believe it won the tie, and both kept asking until one gave up on
// "split vote"). Counted over races on real nodes; a race that happens not
// to split (a slow machine) must have exactly one winner too.
func TestSplitBetweenWriterAndReaderHasOneWinner(t *testing.T) {
	cl := startCluster(t, 5)
	if err := cl.Nodes()[4].Kill(); err != nil {
		t.Fatal(err)
	}
	nodes := nodesOf(cl)
	const far = 30 * time.Millisecond // the slow link, far above a loopback round trip
	var splits atomic.Int64
	countSplits := redlock.WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.Contended && e.Reason == "split_vote" {
			splits.Add(1)
		}
	}))
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout), countSplits}
	writer := newClient(t, nearTo(nodes, far, 0, 1), opts...)
	reader := newClient(t, nearTo(nodes, far, 2, 3), opts...)
	ctx := ctxFor(t)
	const rounds = 16
	var neither, both, gaveUp int
	var lost []string
	for range rounds {
		w, r, err := raceWriterAndReader(ctx, writer, reader, uniqueKey(t))
		switch {
		case w && r:
			both++
		case !w && !r:
			neither++
		}
		if err != nil && errors.Is(err, redlock.ErrSplitVote) {
			gaveUp++ // the rounds of split votes ran out
			lost = append(lost, err.Error())
		}
	}
	t.Logf("%d races: %d split-vote rounds seen, %d without a winner, %d with two, %d where a side gave up on split votes",
		rounds, splits.Load(), neither, both, gaveUp)
	if both > 0 || neither > 0 || gaveUp > 0 {
		t.Fatalf("of %d races, %d had no winner, %d had both a writer and a reader, and in %d a side gave up on split votes; want exactly one winner, the other told it is held; errors: %q",
			rounds, neither, both, gaveUp, lost)
	}
	if splits.Load() == 0 {
		t.Fatal("no attempt saw a split vote: the test did not exercise what it is for")
	}
}

// raceWriterAndReader starts TryLock and TryRLock on key at once and
// reports who got it; each winner holds until both returned, then
// releases.
func raceWriterAndReader(ctx context.Context, writer, reader *rwlock.Client, key string) (wrote, read bool, err error) {
	var wg sync.WaitGroup
	var locks [2]*redlock.Lock
	var errs [2]error
	start := make(chan struct{})
	for i, try := range []func(context.Context, string, time.Duration) (*redlock.Lock, error){writer.TryLock, reader.TryRLock} {
		wg.Go(func() {
			<-start
			locks[i], errs[i] = try(ctx, key, ttl)
		})
	}
	close(start)
	wg.Wait()
	for _, l := range locks {
		if l != nil {
			_ = l.Release(ctx)
		}
	}
	return locks[0] != nil, locks[1] != nil, errors.Join(errs[0], errs[1])
}
