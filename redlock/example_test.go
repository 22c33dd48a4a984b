package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/redis/go-redis/v9"
)

// Three independent Redis servers; a lock needs two of them.
func ExampleNew() {
	var nodes []node.Node
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer rdb.Close()
		nodes = append(nodes, redisnode.New(rdb))
	}
	locks, err := redlock.New(nodes)
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()
	lock, err := locks.Acquire(ctx, "nightly-report", 30*time.Second)
	if err != nil {
		return // another replica runs it, or the nodes are unreachable
	}
	defer lock.Release(context.WithoutCancel(ctx))
	fmt.Println("running with fence", lock.Fence())
}

// Memory nodes lock within one process: for development and unit tests.
func ExampleClient_Acquire() {
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	locks, _ := redlock.New(nodes)
	ctx := context.Background()

	first, _ := locks.Acquire(ctx, "invoice:42", 10*time.Second)
	_, err := locks.TryAcquire(ctx, "invoice:42", 10*time.Second)
	fmt.Println("second while held:", errors.Is(err, redlock.ErrNotAcquired))

	_ = first.Release(ctx)
	second, _ := locks.TryAcquire(ctx, "invoice:42", 10*time.Second)
	fmt.Println("second after release:", second != nil)
	fmt.Println("fence grew:", second.Fence() > first.Fence())
	// Output:
	// second while held: true
	// second after release: true
	// fence grew: true
}

// A holder that outlived its lock finds out on Release or Extend.
func ExampleLock_Release() {
	locks, _ := redlock.New([]node.Node{memnode.New("solo")}, redlock.WithRetry(retry.Never()))
	ctx := context.Background()
	lock, _ := locks.Acquire(ctx, "short", 50*time.Millisecond)
	time.Sleep(80 * time.Millisecond) // the work took longer than the TTL
	err := lock.Release(ctx)
	fmt.Println(errors.Is(err, redlock.ErrLockLost))
	// Output: true
}
