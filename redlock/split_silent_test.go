package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// farNode sends each acquire only after delay: a node this client reaches
// later than another client does.
type farNode struct {
	Node
	delay time.Duration
}

func (f farNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	t := time.NewTimer(f.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return node.AcquireReply{}, ctx.Err()
	}
	return f.Node.Acquire(ctx, a)
}

// stallLog counts the stall guard's firings in acquire rounds: each is an
// attempt that waited for a silent node as long as a round ever does.
type stallLog struct{ n *atomic.Int64 }

func (h stallLog) Enabled(context.Context, slog.Level) bool { return true }
func (h stallLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h stallLog) WithGroup(string) slog.Handler            { return h }
func (h stallLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if r.Message == redlock.StallGuardFired && a.Key == "op" && a.Value.String() == "acquire" {
			h.n.Add(1)
		}
		return true
	})
	return nil
}

// splitClientNodes are the nodes of split contender c on 5 real nodes:
// nodes 0-3 over clients bounded by the node timeout, contender 0 reaching
// nodes 2 and 3 late and contender 1 nodes 0 and 1, so that they split
// the four 2-2; node 4 over a client that ignores deadlines, so that only
// the stall guard ends a wait for it once it is stopped.
func splitClientNodes(t *testing.T, cl *redistest.Cluster, c int, reach time.Duration) []node.Node {
	t.Helper()
	var nodes []node.Node
	for i, n := range cl.Nodes() {
		opts := &redis.Options{Addr: n.Addr(), ContextTimeoutEnabled: true, ReadTimeout: -1, WriteTimeout: -1}
		if i == 4 {
			opts.ContextTimeoutEnabled, opts.PoolSize = false, 500
		}
		rc := redis.NewClient(opts)
		t.Cleanup(func() { _ = rc.Close() })
		var nd node.Node = redisnode.New(rc)
		if i < 4 && i/2 != c {
			nd = farNode{Node: nd.(Node), delay: reach}
		}
		nodes = append(nodes, nd)
	}
	return nodes
}

// Two contenders split a free key 2-2 on the four live nodes of five while
// the fifth (a stopped redis-server) never answers. In every round of
// single attempts exactly one of them wins, and no attempt waits for the
// silent node: the stall guard of an acquire round never fires (it would
// after the node timeout, 10 s). Counted, not timed.
func TestSplitWithSilentNodeOnRealNodes(t *testing.T) {
	t.Parallel()
	const nodeTimeout, reach, rounds = 10 * time.Second, 50 * time.Millisecond, 8
	cl := redistest.StartT(t, 5)
	ctx := ctxFor(t)
	var stalls, splits atomic.Int64
	clients := make([]*redlock.Client, 2)
	for c := range clients {
		clients[c] = newClient(t, splitClientNodes(t, cl, c, reach), redlock.WithNodeTimeout(nodeTimeout),
			redlock.WithLogger(slog.New(stallLog{n: &stalls})),
			redlock.WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.Contended && e.Reason == "split_vote" {
					splits.Add(1)
				}
			})))
		l, err := clients[c].TryAcquire(ctx, uniqueKey(t), time.Minute) // first contact, every node up
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
	}
	if err := cl.Nodes()[4].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[4].Resume() }) // before the clients' Close
	for r := range rounds {
		key := fmt.Sprintf("%s-%d", t.Name(), r)
		locks := make([]*redlock.Lock, len(clients))
		errs := make([]error, len(clients))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for c, cl := range clients {
			wg.Go(func() {
				<-start
				locks[c], errs[c] = cl.TryAcquire(ctx, key, 5*time.Minute)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for c, l := range locks {
			switch {
			case l != nil:
				won++
			case !errors.Is(errs[c], redlock.ErrNotAcquired):
				t.Fatalf("round %d: contender %d: %v", r, c, errs[c])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1: %v", r, won, errs)
		}
		if n := stalls.Load(); n > 0 {
			t.Fatalf("round %d: the stall guard fired in %d acquire rounds so far: attempts waited for the silent node", r, n)
		}
		for _, l := range locks {
			if l != nil {
				_ = l.Release(ctx)
			}
		}
	}
	if splits.Load() == 0 {
		t.Errorf("no split vote in %d rounds: the scenario did not happen", rounds)
	}
	t.Logf("%d split votes in %d rounds", splits.Load(), rounds)
}
