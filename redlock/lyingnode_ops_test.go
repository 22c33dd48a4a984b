package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestLyingNodesFailAloneInEveryCall: beside three real nodes, two that
// answer every lock command badly (every fakeresp fault) are each call's own
// failure, for every call that reaches the nodes, not only acquire and
// release: Extend, Inspect, Locks, Released and ForceRelease all succeed on
// the majority, without a panic or a hang.
func TestLyingNodesFailAloneInEveryCall(t *testing.T) {
	t.Parallel()
	real := startCluster(t, 3)
	for _, f := range fakeresp.Faults {
		t.Run(f.Name, func(t *testing.T) {
			c := newClient(t, append(nodesOf(real), lyingNodes(t, 2, f)...), redlock.WithNodeTimeout(testNodeTimeout))
			ctx := ctxFor(t)
			key := uniqueKey(t)
			l, err := c.Acquire(ctx, key, 10*time.Second)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if err := l.Extend(ctx, 10*time.Second); err != nil {
				t.Errorf("extend: %v", err)
			}
			if info, err := c.Inspect(ctx, key); err != nil || !info.Held {
				t.Errorf("inspect: held %v, %v", info.Held, err)
			}
			if err := listedOnce(c, ctx, key); err != nil {
				t.Errorf("locks: %v", err)
			}
			if _, err := c.Released(ctx, key); err != nil {
				t.Errorf("released: %v", err)
			}
			if _, err := c.ForceRelease(ctx, key, ""); err != nil {
				t.Errorf("force release: %v", err)
			}
			if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
				t.Errorf("extend after force release: %v, want ErrLockLost", err)
			}
		})
	}
}

// listedOnce says whether Client.Locks lists key exactly once, with no error.
func listedOnce(c *redlock.Client, ctx context.Context, key string) error {
	n := 0
	for info, err := range c.Locks(ctx, key) {
		if err != nil {
			return err
		}
		if info.Key == key {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%q listed %d times, want once", key, n)
	}
	return nil
}
