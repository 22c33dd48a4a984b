package redlock_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// keyOnShard returns a key (of the client's key names, prefix "lock:")
// whose slot one shard serves.
func keyOnShard(t *testing.T, s *redistest.Sharded, shard int, tag string) string {
	t.Helper()
	for i := range 10000 {
		key := fmt.Sprintf("%s-%s-%d", t.Name(), tag, i)
		if s.ShardOf("lock:{"+key+"}") == shard {
			return key
		}
	}
	t.Fatalf("no key found on shard %d", shard)
	return ""
}

// Each of three nodes is a Redis Cluster of three masters with the slots
// split. Two of the nodes restart one shard empty while keys are held on
// every shard: the keys of that shard sit out (a competitor is refused
// with ErrRecovering), the keys of the other shards do not (refused as
// held, and new keys there are acquired at once).
func TestClusterShardRestartedEmptySitsOutItsSlotsOnly(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip(redistest.SkipShort) // StartShardedT's skip would end only its goroutine
	}
	clusters := make([]*redistest.Sharded, 3)
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() { clusters[i] = redistest.StartShardedT(t, 3) })
	}
	wg.Wait()
	if t.Failed() || t.Skipped() {
		t.FailNow()
	}
	nodes := make([]node.Node, len(clusters))
	for i, s := range clusters {
		nodes[i] = redisnode.NewNamed(fmt.Sprintf("cluster-%d", i), s.NewClient(t))
	}
	opts := recoveringOpts(time.Hour)
	holder := newClient(t, nodes, opts...)
	competitor := newClient(t, nodes, opts...)
	ctx := ctxFor(t)
	held := make([]string, 3) // a held key on each shard
	for shard := range held {
		held[shard] = keyOnShard(t, clusters[0], shard, "held")
		if _, err := holder.TryAcquire(ctx, held[shard], 30*time.Second); err != nil {
			t.Fatalf("shard %d: %v", shard, err)
		}
	}
	_ = holder.Close() // its requests in flight have landed
	const lost = 1
	for _, c := range clusters[:2] {
		if err := c.RestartEmpty(ctx, lost); err != nil {
			t.Fatal(err)
		}
	}
	for shard, key := range held {
		_, err := competitor.TryAcquire(ctx, key, 30*time.Second)
		switch {
		case shard == lost && !errors.Is(err, redlock.ErrRecovering):
			t.Errorf("the key held on the restarted shard: %v, want ErrRecovering", err)
		case shard != lost && (errors.Is(err, redlock.ErrRecovering) || !errors.Is(err, redlock.ErrNotAcquired)):
			t.Errorf("the key held on shard %d, which kept its data: %v, want refused as held", shard, err)
		}
	}
	for shard := range 3 {
		if shard == lost {
			continue
		}
		l, err := competitor.TryAcquire(ctx, keyOnShard(t, clusters[0], shard, "new"), 30*time.Second)
		if err != nil {
			t.Errorf("a new key on shard %d, which kept its data: %v", shard, err)
			continue
		}
		_ = l.Release(ctx)
	}
}
