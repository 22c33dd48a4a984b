//go:build !race

package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// maxCycleAllocs bounds the heap allocations of one uncontended TryAcquire
// + Release on 5 nodes, the client's and go-redis's together (a plain
// Redlock cycle through redsync costs about 144 in the bench).
// It is today's quiet count (132) plus about 13%: on a busy machine more
// answers arrive after the decision, and each late one costs a timer and
// its bookkeeping (137 seen as the least of the windows under load).
const maxCycleAllocs = 150

// The hot path pays for what it uses: the nodes of a round share one
// command's arguments (not a copy per node), the key names of a call are
// one allocation, per-node bookkeeping lives in its owner's storage, and
// a node call that did not panic costs nothing to check. Counted, not
// timed.
func TestCycleAllocations(t *testing.T) {
	c := newClient(t, nodesOf(redistest.StartT(t, 5)), redlock.WithNodeTimeout(testNodeTimeout))
	ctx := context.Background()
	cycle := func() {
		l, err := c.TryAcquire(ctx, "allocs", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 { // connections dialled, scripts loaded
		cycle()
	}
	// AllocsPerRun counts every goroutine's allocations, and a timer or a
	// connection reaper that runs inside one window adds its own: the least
	// of five windows is the cycle's cost.
	got := testing.AllocsPerRun(100, cycle)
	for range 4 {
		got = min(got, testing.AllocsPerRun(100, cycle))
	}
	t.Logf("%.0f allocations per cycle (least of five windows of 100)", got)
	if got > maxCycleAllocs {
		t.Errorf("one cycle allocates %.0f objects, want at most %d", got, maxCycleAllocs)
	}
}
