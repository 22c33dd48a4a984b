package semaphore_test

import (
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/semaphore"
	"github.com/redis/go-redis/v9"
)

// On a cluster-enabled server through a ClusterClient, every key a
// semaphore writes (each slot's lock key, fence counter and trail) hashes
// to one Redis Cluster slot: the name's.
func TestSlotsShareOneClusterSlot(t *testing.T) {
	cl := redistest.StartClusterModeT(t)
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = rc.Close() })
	cs := newClients(t, []node.Node{redisnode.NewNamed("cluster", rc)}, 1)
	ctx := ctxFor(t, time.Minute)
	const name = "cluster-sem"
	sem, err := semaphore.New(cs[0], name, 4)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		p, err := sem.TryAcquire(ctx, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(ctx)
	}
	want, err := rc.ClusterKeySlot(ctx, name).Result()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := rc.Keys(ctx, "*"+name+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 4 {
		t.Fatalf("%d keys on the server, want at least the 4 slots' locks: %v", len(keys), keys)
	}
	for _, k := range keys {
		got, err := rc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("key %q in cluster slot %d, the name's is %d", k, got, want)
		}
	}
}
