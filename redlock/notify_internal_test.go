package redlock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Once a client's subscriptions are up, an Acquire of a free key does not
// wait for them again (a regression: every Acquire after the first waited
// a whole node timeout).
func TestAcquireWaitsForSubscriptionsOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := mustNew(t, asNodes(memNodes(3)), WithNodeTimeout(time.Second))
		ctx := context.Background()
		for i := range 3 {
			start := time.Now()
			l, err := c.Acquire(ctx, "k", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 0 {
				t.Fatalf("Acquire %d of a free key took %s", i, d)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.Close()
	})
}
