package rwlock_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

func memoryNodes() []node.Node {
	return []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
}

// A writer that gives up keeps new readers out for the TTL of its last
// attempt, no longer (synctest's clock, memory nodes).
func TestIntentIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, memoryNodes())
		ctx, key := ctxFor(t), uniqueKey(t)
		r := mustLock(t)(c.TryRLock(ctx, key, time.Minute))
		defer func() { _ = r.Release(ctx) }()
		if _, err := c.TryLock(ctx, key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryLock under a reader: %v, want ErrNotAcquired", err)
		}
		if _, err := c.TryRLock(ctx, key, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("TryRLock while a writer waits: %v, want ErrNotAcquired", err)
		}
		time.Sleep(5 * time.Second)
		r2 := mustLock(t)(c.TryRLock(ctx, key, time.Minute))
		_ = r2.Release(ctx)
	})
}

// A reader that never releases (a crashed process) holds a writer off
// until its own expiry, and no longer (synctest's clock, memory nodes).
func TestWriterWaitsForReaderExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, memoryNodes(), redlock.WithRetry(retry.Constant(1000, 200*time.Millisecond, 100*time.Millisecond)))
		ctx, key := ctxFor(t), uniqueKey(t)
		begin := time.Now()
		mustLock(t)(c.TryRLock(ctx, key, 20*time.Second)) // never released
		w := mustLock(t)(c.Lock(ctx, key, time.Minute))
		if waited := time.Since(begin); waited < 20*time.Second || waited > 21*time.Second {
			t.Fatalf("writer got in after %s, want just after the reader's 20s", waited)
		}
		_ = w.Release(ctx)
	})
}
