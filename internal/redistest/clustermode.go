package redistest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// StartClusterModeT starts one redis-server with cluster mode enabled that
// owns all 16384 slots, for tests of clients that route by slot (a
// redis.ClusterClient on Addrs()[0]). It waits until the cluster state is
// ok. A missing redis-server skips or fails the test as StartT does.
func StartClusterModeT(t testing.TB) *Cluster {
	t.Helper()
	c := StartTWithOptions(t, 1, Options{ExtraArgs: []string{"--cluster-enabled", "yes"}, Fresh: true})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := c.nodes[0].Client()
	if err := client.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("redistest: cluster addslotsrange: %v", err)
	}
	for {
		info, err := client.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: cluster state not ok: %v (last: %v, %q)", ctx.Err(), err, info)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
