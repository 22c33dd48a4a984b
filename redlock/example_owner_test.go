package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// Who holds which lock, listed by a glob, and a takeover after an eviction.
func ExampleClient_Locks() {
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	worker, _ := redlock.New(nodes, redlock.WithOwner("worker-7"))
	defer worker.Close()
	rescuer, _ := redlock.New(nodes, redlock.WithOwner("worker-8"))
	defer rescuer.Close()
	ctx := context.Background()

	_, _ = worker.TryAcquire(ctx, "job:1", time.Minute) // then worker-7 hangs
	_, _ = worker.TryAcquire(ctx, "cron:daily", time.Minute)
	for info, err := range rescuer.Locks(ctx, "job:*") {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(info.Key, "held by", info.Owner, "on a majority:", info.Held)
		if _, err := rescuer.ForceRelease(ctx, info.Key, info.Holder); err != nil {
			fmt.Println(err)
			return
		}
	}
	l, _ := rescuer.TryAcquire(ctx, "job:1", time.Minute)
	defer l.Release(ctx)
	if prev, ok := l.TookOver(); ok {
		fmt.Println("took over from", prev.Owner, "with a larger fence:", l.Fence() > prev.Fence)
	}
	// Output:
	// job:1 held by worker-7 on a majority: true
	// took over from worker-7 with a larger fence: true
}
