package promlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/promlock"
	"github.com/quorumlock/quorumlock/redlock"
)

// Two of 3 nodes flushed under a held lock: a competitor's attempt gets
// their yes votes, which do not count (they lost their data), and it is
// refused. Each such node is counted once per attempt in
// node_recovering_total, and the node request histogram still counts one
// request per node and round (the recovering report is not a second
// request).
func TestRecoveringNodesCounted(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	defer cancel()
	reg := flushUnderHeldLock(t, ctx, cl, "job:1")
	checkRecoveringCounted(t, reg, cl)
}

// flushUnderHeldLock acquires key, flushes 2 of the 3 nodes, and checks
// that a competing TryAcquire is refused as recovering; the registry holds
// the metrics of both calls.
func flushUnderHeldLock(t *testing.T, ctx context.Context, cl *redistest.Cluster, key string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	obs, err := promlock.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	c, err := redlock.New(nodes, redlock.WithObserver(obs), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Acquire(ctx, key, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = c.Close() // the acquisition's requests have all landed
	for _, rc := range cl.Clients()[:2] {
		if err := rc.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err = c.TryAcquire(ctx, key, 30*time.Second); !errors.Is(err, redlock.ErrRecovering) {
		t.Fatalf("TryAcquire with 2 nodes flushed: %v, want ErrRecovering", err)
	}
	if err := c.Close(); err != nil { // the node events of the last round are in
		t.Fatal(err)
	}
	return reg
}

func checkRecoveringCounted(t *testing.T, reg *prometheus.Registry, cl *redistest.Cluster) {
	t.Helper()
	fams := families(t, reg)
	for i, rc := range cl.Clients() {
		want := 0.0
		if i < 2 {
			want = 1
		}
		if got := value(t, fams, "quorumlock_node_recovering_total", labels{"node": rc.Options().Addr}); got != want {
			t.Errorf("node_recovering_total{node=%s} = %v, want %v", rc.Options().Addr, got, want)
		}
	}
	if all, won := value(t, fams, "quorumlock_acquisitions_total", nil), value(t, fams, "quorumlock_acquisitions_total", labels{"result": "acquired"}); all != 2 || won != 1 {
		t.Errorf("acquisitions_total %v, acquired %v: want 2, 1 (the competitor lost)", all, won)
	}
	if got := value(t, fams, "quorumlock_node_request_duration_seconds", labels{"op": "acquire"}); int(got)%3 != 0 {
		t.Errorf("node acquire requests %v: want 3 per round", got)
	}
	if got := value(t, fams, "quorumlock_node_errors_total", nil); got != 0 {
		t.Errorf("node_errors_total %v: a recovering node is not an error", got)
	}
}
