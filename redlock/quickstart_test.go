package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// The README's quickstart, line for line, on real redis-server nodes
// instead of 10.0.0.x: it must run, not only compile (ExampleNew).
func TestQuickstartRuns(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ran := false
	quickstart := func(addrs []string) {
		var nodes []node.Node
		for _, addr := range addrs {
			rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
			defer rdb.Close()
			nodes = append(nodes, redisnode.New(rdb))
		}
		locks, err := redlock.New(nodes)
		if err != nil {
			panic(err)
		}
		defer locks.Close()
		ctx := context.Background()
		lock, err := locks.Acquire(ctx, "nightly-report", 30*time.Second)
		if err != nil {
			t.Errorf("acquire: %v", err)
			return // another replica runs it, or the nodes are unreachable
		}
		defer lock.Release(context.WithoutCancel(ctx))
		ran = lock.Fence() > 0
	}
	quickstart(cl.Addrs())
	if !ran {
		t.Fatal("the quickstart did not get a lock with a fence")
	}
	// Release returns once a majority deleted the key (and a short linger);
	// the quickstart then closes its clients, which may cut a straggler's
	// delete short: that key expires with its TTL, on a minority.
	if h := eventuallyFree(t, cl, "lock:nightly-report"); countEqual(h, "") < 2 {
		t.Fatalf("the quickstart's deferred release left %v", h)
	}
}
