package redlock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// With two of five nodes dead (down, and answering each request with an
// error only after a client-side retry backoff, as go-redis does with a
// refused connection), an acquisition of a key younger than the recovery
// period is decided by the three live nodes at once: the young-key linger
// does not wait for nodes already known to be failing. Before, every such
// acquisition waited the linger out (2 ms at least), which halved the
// throughput of a contended key with exactly a quorum of nodes up.
func TestExactQuorumYoungKeyDoesNotWaitForDeadNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(5)
		nodes := asNodes(ms)
		for _, i := range []int{3, 4} {
			ms[i].SetDown(true, false)
			nodes[i] = late{Node: ms[i], delay: 20 * time.Millisecond}
		}
		c := mustNew(t, nodes, WithNodeTimeout(time.Second)) // recovery on: the default period
		defer c.Close()
		ctx := context.Background()
		// The first acquisition learns that nodes 3 and 4 fail.
		l, err := c.TryAcquire(ctx, "first", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // every request to the dead nodes answered
		for _, key := range []string{"a", "b", "c"} {
			start := time.Now()
			l, err := c.TryAcquire(ctx, key, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 0 {
				t.Errorf("acquiring new key %q with nodes 3 and 4 known dead waited %s for them", key, d)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}
