package tick_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// TestQuickstartRunsOncePerTick: the README's quickstart, line for line, on
// three replicas that fire together on real redis-server nodes instead of
// 10.0.0.x, with a job that takes no time: it runs once, and the two others
// print why they did not run it.
func TestQuickstartRunsOncePerTick(t *testing.T) {
	cl := redistest.StartT(t, 3)
	var runs, turnedAway atomic.Int64
	var mu sync.Mutex
	ticks := map[string]bool{}
	sendReport := func(context.Context) error { runs.Add(1); return nil }
	quickstart := func(addrs []string) {
		var nodes []node.Node
		for _, addr := range addrs {
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
		// Every replica calls this at the top of each hour: one of them runs the job.
		res, err := tick.Run(ctx, locks, "hourly-report", tick.Every(time.Hour), func(ctx context.Context) error {
			lock, _ := redlock.LockFromContext(ctx)
			fmt.Println("running with fence", lock.Fence())
			return sendReport(ctx)
		})
		mu.Lock()
		ticks[res.Tick] = true
		mu.Unlock()
		if err != nil {
			t.Error(err)
		} else if !res.Ran {
			fmt.Println(res) // job hourly-report tick 2026-...T10:00:00Z: already ran; by host-b/...
			turnedAway.Add(1)
		}
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { quickstart(cl.Addrs()) })
	}
	wg.Wait()
	if len(ticks) > 1 {
		t.Skipf("the replicas fired on both sides of a half hour: %v", ticks) // once in 3600 s of runs
	}
	if runs.Load() != 1 || turnedAway.Load() != 2 {
		t.Fatalf("the job ran %d times; %d replicas were turned away", runs.Load(), turnedAway.Load())
	}
}
