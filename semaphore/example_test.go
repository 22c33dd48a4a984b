package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/semaphore"
)

// At most two exports at once, across every process that uses the same
// nodes (memory nodes here; redisnode.New in production).
func Example() {
	locks, _ := redlock.New([]node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")})
	defer locks.Close()
	ctx := context.Background()
	exports, _ := semaphore.New(locks, "export", 2)

	first, _ := exports.TryAcquire(ctx, 10*time.Second)
	second, _ := exports.TryAcquire(ctx, 10*time.Second)
	_, err := exports.TryAcquire(ctx, 10*time.Second)
	fmt.Println("third while two run:", errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println("distinct slots:", first.Slot() != second.Slot())

	_ = first.Release(ctx)
	err = exports.Do(ctx, 10*time.Second, func(ctx context.Context) error {
		permit, _ := redlock.LockFromContext(ctx)
		fmt.Println("running on the freed slot:", permit.Key() == semaphore.SlotKey("export", first.Slot()))
		return nil
	})
	fmt.Println("done:", err)
	_ = second.Release(ctx)
	// Output:
	// third while two run: true
	// distinct slots: true
	// running on the freed slot: true
	// done: <nil>
}
