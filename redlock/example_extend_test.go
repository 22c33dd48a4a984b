package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// Do holds the lock while the work runs, extending it past its TTL, and
// releases it afterwards.
func ExampleClient_Do() {
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	locks, _ := redlock.New(nodes)
	ctx := context.Background()

	// A TTL of seconds: the watchdog extends it once a third is left, and a
	// loaded machine stalling this process for a few hundred milliseconds
	// does not lose it (a 300ms TTL did, under make test-stress).
	err := locks.Do(ctx, "rebuild-index", 3*time.Second, func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		fmt.Println("has a fence:", lock.Fence() > 0) // pass it with every write the work makes
		select {
		case <-time.After(3500 * time.Millisecond): // longer than the TTL: kept alive meanwhile
			fmt.Println("work done, lock still held:", lock.Err() == nil)
			return nil
		case <-ctx.Done(): // the lock was lost: stop writing
			return context.Cause(ctx)
		}
	})
	fmt.Println("err:", err)
	// Output:
	// has a fence: true
	// work done, lock still held: true
	// err: <nil>
}

// TryDo runs a job on one replica only: the others get (false, nil).
func ExampleClient_TryDo() {
	locks, _ := redlock.NewLocal()
	ctx := context.Background()
	ran, err := locks.TryDo(ctx, "nightly-report", time.Minute, func(ctx context.Context) error {
		// Another replica starting now finds the lock held.
		again, err := locks.TryDo(ctx, "nightly-report", time.Minute, func(context.Context) error { return nil })
		fmt.Println("second replica ran:", again, err)
		return nil
	})
	fmt.Println("first replica ran:", ran, err)
	// Output:
	// second replica ran: false <nil>
	// first replica ran: true <nil>
}

// A lock whose nodes fail is declared lost before its validity ends: Done
// closes and the cause wraps ErrLockLost.
func ExampleLock_KeepAlive() {
	a, b, c := memnode.New("a"), memnode.New("b"), memnode.New("c")
	locks, _ := redlock.New([]node.Node{a, b, c})
	ctx := context.Background()
	lock, _ := locks.Acquire(ctx, "job", 200*time.Millisecond)
	defer lock.Release(ctx)
	lock.KeepAlive()

	a.SetDown(true, false)
	b.SetDown(true, false) // no majority left
	<-lock.Done()
	fmt.Println(errors.Is(lock.Err(), redlock.ErrLockLost))
	// Output: true
}
