package redlock_test

// A Redis Cluster client on a real cluster-enabled redis-server is one node:
// a lock and its fence counter share a slot.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// startClusterMode starts n independent redis-servers with cluster mode
// enabled, each a one-node cluster that owns all 16384 slots, and waits
// until each reports cluster_state:ok.
func startClusterMode(t *testing.T, n int) *redistest.Cluster {
	t.Helper()
	cl := redistest.StartTWithOptions(t, n, redistest.Options{ExtraArgs: []string{"--cluster-enabled", "yes"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	for _, nd := range cl.Nodes() {
		if err := nd.Client().Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
			t.Fatalf("%v: cluster addslotsrange: %v", nd, err)
		}
	}
	for _, nd := range cl.Nodes() { // the servers settle in parallel
		for {
			info, err := nd.Client().ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%v: cluster state not ok: %v (last: %v, %q)", nd, ctx.Err(), err, info)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return cl
}

// clusterModeClient is a go-redis ClusterClient on a cluster-mode server.
func clusterModeClient(t *testing.T, addr string) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{addr},
		DialTimeout:           time.Second,
		ReadTimeout:           slowNodeTimeout,
		WriteTimeout:          slowNodeTimeout,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// TestClusterMode: a *redis.ClusterClient on a real cluster-enabled
// redis-server is one node: acquire, a contender's single attempt, extend,
// a waiter woken by the release, and its larger fence, all without
// CROSSSLOT. On the old design the lock key and its counter hashed to
// different slots and every acquisition failed.
func TestClusterMode(t *testing.T) {
	t.Parallel()
	for _, layout := range []struct {
		name          string
		cluster, flat int
	}{
		{"3-cluster-nodes", 3, 0},
		{"1-cluster-2-plain", 1, 2},
	} {
		t.Run(layout.name, func(t *testing.T) {
			ctx := ctxFor(t)
			cm := startClusterMode(t, layout.cluster)
			var nodes []node.Node
			var ccs []*redis.ClusterClient
			for _, addr := range cm.Addrs() {
				cc := clusterModeClient(t, addr)
				// This server refuses a script over keys of two slots: the
				// old names ("lock:k", "lock:k:fence") would fail here.
				err := cc.Eval(ctx, "return 1", []string{"lock:k", "lock:k:fence"}).Err()
				if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
					t.Fatalf("cluster node %s accepted a script over two slots (%v): it cannot tell old names from new", addr, err)
				}
				ccs = append(ccs, cc)
				nodes = append(nodes, redisnode.NewNamed("cluster@"+addr, cc))
			}
			if layout.flat > 0 {
				nodes = append(nodes, nodesOf(startCluster(t, layout.flat))...)
			}
			opts := []redlock.Option{redlock.WithNodeTimeout(slowNodeTimeout)}
			c := newClient(t, nodes, opts...)
			other := newClient(t, nodes, opts...)
			key := uniqueKey(t)
			name := c.KeyName(key)

			l1, err := c.Acquire(ctx, key, longTTL)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if _, err := other.TryAcquire(ctx, key, longTTL); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("contender's single attempt while held: %v; want ErrNotAcquired", err)
			}
			if err := l1.Extend(ctx, longTTL); err != nil {
				t.Fatalf("extend: %v", err)
			}

			// On every cluster node: the lock holds our token, and it and its
			// counter are in one slot.
			for i, cc := range ccs {
				if v, err := cc.Get(ctx, name).Result(); err != nil || wire.ParseLockValue(v).Token != l1.Token() {
					// Acquire returns at a majority; give a slow node a moment.
					waitUntil(t, fmt.Sprintf("cluster node %d holds the token", i), func() bool {
						v, err := cc.Get(ctx, name).Result()
						return err == nil && wire.ParseLockValue(v).Token == l1.Token()
					})
				}
				s1, err1 := cc.ClusterKeySlot(ctx, name).Result()
				s2, err2 := cc.ClusterKeySlot(ctx, wire.CounterKey(name)).Result()
				if err := errors.Join(err1, err2); err != nil || s1 != s2 {
					t.Fatalf("cluster node %d: %q in slot %d, its counter %q in slot %d (%v)", i, name, s1, wire.CounterKey(name), s2, err)
				}
				if v, err := cc.Get(ctx, name).Result(); err != nil {
					t.Fatalf("cluster node %d: record %q: %v", i, name, err)
				} else if _, f, _, ok := wire.ParseRecord(v); !ok || f == 0 {
					t.Fatalf("cluster node %d: record %q = %q; want a count", i, name, v)
				}
			}

			// A waiter (another client) gets the lock once we release it.
			type result struct {
				l   *redlock.Lock
				err error
			}
			got := make(chan result, 1)
			go func() {
				l, err := other.Acquire(ctx, key, longTTL)
				got <- result{l, err}
			}()
			time.Sleep(50 * time.Millisecond) // let the waiter find the lock held (not needed for correctness)
			if err := l1.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			var r result
			select {
			case r = <-got:
			case <-ctx.Done():
				t.Fatal("hang guard: the waiter never got the lock")
			}
			if r.err != nil {
				t.Fatalf("waiter: %v", r.err)
			}
			if r.l.Fence() <= l1.Fence() {
				t.Fatalf("second acquisition's fence %d is not above the first's %d", r.l.Fence(), l1.Fence())
			}
			if err := r.l.Extend(ctx, longTTL); err != nil {
				t.Fatalf("waiter's extend: %v", err)
			}
			if err := r.l.Release(ctx); err != nil {
				t.Fatalf("waiter's release: %v", err)
			}
			t.Logf("fences %d then %d", l1.Fence(), r.l.Fence())
		})
	}
}
