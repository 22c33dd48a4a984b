package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/multilock"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// A transfer locks both accounts, in the same order whoever names them
// first, and writes each with its own fence (memory nodes here;
// redisnode.New in production).
func Example() {
	locks, _ := redlock.New([]node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")})
	defer locks.Close()
	ctx := context.Background()

	err := multilock.Do(ctx, locks, []string{"account:7", "account:3"}, 10*time.Second, func(ctx context.Context) error {
		set, _ := multilock.FromContext(ctx)
		fmt.Println("holding", set.Keys())
		fmt.Println("fences:", set.Fence("account:3") > 0, set.Fence("account:7") > 0)

		_, err := locks.TryAcquire(ctx, "account:3", 10*time.Second)
		fmt.Println("account:3 taken:", errors.Is(err, redlock.ErrNotAcquired))
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// holding [account:3 account:7]
	// fences: true true
	// account:3 taken: true
	// done: <nil>
}

// A set is extended by hand, as node-redlock's lock.extend(ttl): every key,
// or an error. ErrLockLost means the set is over; any other error leaves
// it held until ValidUntil, and Extend may be tried again.
func ExampleLock_Extend() {
	locks, _ := redlock.New([]node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")})
	defer locks.Close()
	ctx := context.Background()

	set, err := multilock.Acquire(ctx, locks, []string{"file:1", "file:2"}, 10*time.Second)
	if err != nil {
		fmt.Println("not acquired:", err)
		return
	}
	defer set.Release(ctx)

	err = set.Extend(ctx, time.Minute)
	switch {
	case errors.Is(err, redlock.ErrLockLost):
		fmt.Println("lost:", err) // stop: another holder may have the keys
	case err != nil:
		fmt.Println("not extended, held until", set.ValidUntil())
	default:
		fmt.Println("held for more than 50s:", time.Until(set.ValidUntil()) > 50*time.Second)
	}
	// Output:
	// held for more than 50s: true
}
