package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestFenceSurvivesMajorityRestart: fences keep growing after a majority of
// nodes restarted empty (after the delay), decided by those empty nodes. The
// counters lived in the lost data; they restart from the client's clock in
// microseconds, above every fence handed out before. (This was a
// reproducer of a limitation, fixed by seeding new counters from the clock.)
func TestFenceSurvivesMajorityRestart(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartT(t, 5)
	// Node timeouts a loaded machine meets; the TTL only sets the delay.
	// Recovery off: the operator delays the restarts (the rule this test
	// is about); with recovery on, the restarted majority would sit out.
	c, err := redlock.New(newNodes(cl.Clients()), redlock.WithNodeTimeout(time.Second), redlock.WithRecoveryPeriod(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	const ttl = 2 * time.Second
	var last uint64
	for range 5 {
		l, err := c.Acquire(ctx, "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		last = l.Fence()
		_ = l.Release(ctx) // a failed release only leaves the key to expire
	}
	// Nodes 0-2 restart empty, after the delay the README asks for.
	for _, i := range []int{0, 1, 2} {
		if err := cl.Nodes()[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * ttl)
	for _, i := range []int{0, 1, 2} {
		if err := cl.Nodes()[i].Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Nodes 3 and 4 answer slowly this once (paused), so the acquisition
	// is decided by the first majority to answer: nodes 0-2.
	for _, i := range []int{3, 4} {
		if err := cl.Nodes()[i].Pause(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.Acquire(ctx, "k", ttl)
	for _, i := range []int{3, 4} {
		_ = cl.Nodes()[i].Resume()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Fence() <= last {
		t.Errorf("fence went backwards: %d after %d (nodes 0-2 restarted empty after 2 TTL)", l.Fence(), last)
	}
}
