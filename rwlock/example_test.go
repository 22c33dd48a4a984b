package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// Readers share the lock, a writer excludes them, and each carries a fence.
// Memory nodes here; use redisnode.New on independent servers in
// production.
func Example() {
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	c, err := rwlock.New(nodes)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	w, _ := c.Lock(ctx, "schema", 10*time.Second)
	writerFence := w.Fence()
	_ = w.Release(ctx)

	r1, _ := c.RLock(ctx, "schema", 10*time.Second)
	r2, _ := c.RLock(ctx, "schema", 10*time.Second)
	fmt.Println("two readers at once:", r1 != nil && r2 != nil)
	fmt.Println("readers' fences are at least the last writer's:", r1.Fence() >= writerFence && r2.Fence() >= writerFence)

	_, err = c.TryLock(ctx, "schema", 10*time.Second)
	fmt.Println("a writer while they read is refused:", errors.Is(err, redlock.ErrNotAcquired))
	_, _ = r1.Release(ctx), r2.Release(ctx)

	err = c.Do(ctx, "schema", 10*time.Second, func(ctx context.Context) error {
		l, _ := redlock.LockFromContext(ctx)
		fmt.Println("next writer's fence is larger:", l.Fence() > writerFence)
		return nil
	})
	fmt.Println("Do:", err)
	// Output:
	// two readers at once: true
	// readers' fences are at least the last writer's: true
	// a writer while they read is refused: true
	// next writer's fence is larger: true
	// Do: <nil>
}
