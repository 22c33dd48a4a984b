package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// A retry policy for one call: this Acquire tries 3 times, 50 ms apart,
// whatever the client's policy.
func ExampleContextWithRetry() {
	locks, err := redlock.New([]node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")})
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	ctx := context.Background()
	held, err := locks.Acquire(ctx, "report", time.Minute)
	if err != nil {
		panic(err)
	}
	defer held.Release(ctx)

	_, err = locks.Acquire(redlock.ContextWithRetry(ctx, retry.Constant(2, 50*time.Millisecond, 0)), "report", time.Minute)
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired))
	// Output: true
}
