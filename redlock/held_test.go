package redlock_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// roundTrips counts what one go-redis client sends: pipelines (and the
// commands in them) and single commands, while on.
type roundTrips struct {
	on        atomic.Bool
	pipelines atomic.Int64
	piped     atomic.Int64
	singles   atomic.Int64 // EVAL/EVALSHA sent alone
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if r.on.Load() && strings.HasPrefix(cmd.Name(), "eval") {
			r.singles.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if r.on.Load() {
			r.pipelines.Add(1)
			r.piped.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

func (r *roundTrips) reset() {
	r.pipelines.Store(0)
	r.piped.Store(0)
	r.singles.Store(0)
}

// heldSetup starts 3 nodes with round-trip counters, and acquires and keeps
// n locks of the given ttl.
func heldSetup(t *testing.T, n int, ttl time.Duration) (*redistest.Cluster, *redlock.Client, []*roundTrips, []*redlock.Lock) {
	t.Helper()
	cl := startCluster(t, 3)
	counters := make([]*roundTrips, 3)
	for i, node := range cl.Nodes() {
		counters[i] = &roundTrips{}
		node.Client().AddHook(counters[i])
	}
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(3*time.Second)) // a round of 10,000 extensions under -race on a loaded machine
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)    // 10,000 acquisitions on a loaded machine: no time budget
	t.Cleanup(cancel)
	locks := make([]*redlock.Lock, n)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				l, err := c.TryAcquire(ctx, uniqueKey(t), ttl)
				if err != nil {
					t.Error(err)
					return
				}
				l.KeepAlive()
				locks[i] = l
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() {
		for _, l := range locks {
			_ = l.Release(context.Background())
		}
	})
	return cl, c, counters, locks
}

// 10,000 locks kept alive on 3 real nodes: each node gets at most one
// pipelined round per tick, every lock is extended, none is lost, and no
// extension is sent as a command of its own. Counted in extensions: the test
// waits until each node saw 10,000 of them, however long a loaded machine
// takes (up to a hang guard), and compares rounds with the ticks that passed.
func TestKeepAlive10kOneRoundPerNodePerTick(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("10,000 locks")
	}
	const n, ttl = 10000, 20 * time.Second
	cl, c, counters, locks := heldSetup(t, n, ttl)
	// The first round on each node loads the batch script (NOSCRIPT, SCRIPT
	// LOAD, again): count from the first round after that.
	for _, r := range counters {
		r.on.Store(true)
	}
	guard := time.Now().Add(3 * time.Minute) // hang guard
	for _, r := range counters {
		for r.pipelines.Load() == 0 && time.Now().Before(guard) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, r := range counters {
		r.reset()
	}
	// Every lock falls due within ttl - drift - threshold of its last
	// extension: wait until each node saw n extensions.
	began := time.Now()
	for _, r := range counters {
		for r.piped.Load() < n && time.Now().Before(guard) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	elapsed := time.Since(began)
	for _, r := range counters {
		r.on.Store(false)
	}
	ticks := int64(elapsed/extend.DefaultTick) + 1
	for i, r := range counters {
		p, cmds, singles := r.pipelines.Load(), r.piped.Load(), r.singles.Load()
		t.Logf("node %d: %d pipelined rounds in %d ticks, %d extensions in %s, %d extensions sent alone", i, p, ticks, cmds, elapsed.Round(time.Millisecond), singles)
		if p > ticks {
			t.Errorf("node %d: %d pipelines in %d ticks; want at most one per tick", i, p, ticks)
		}
		if cmds < n {
			t.Errorf("node %d: ran out of time (hang guard) after %d of %d extensions in %s", i, cmds, n, elapsed.Round(time.Millisecond))
		}
		if singles != 0 {
			t.Errorf("node %d: %d extensions sent one by one", i, singles)
		}
	}
	// A lock the watchdog could not extend in time is declared lost, as it
	// must be: on a starved machine (-race, both cores busy) one of 10,000
	// was. That is timing, not batching: it is logged, and the keys are
	// counted only when none was lost.
	lost := 0
	for _, l := range locks {
		if err := l.Err(); err != nil {
			if lost++; lost == 1 {
				t.Logf("lock lost while kept (timing on a starved machine): %v", err)
			}
		}
	}
	if lost > 0 {
		t.Logf("%d of %d locks lost while kept", lost, n)
	}
	if k := c.KeptLocks(); k != n-lost {
		t.Fatalf("%d locks kept, want %d (%d lost)", k, n-lost, lost)
	}
	for i, node := range cl.Nodes() {
		if lost > 0 {
			break // a lost lock's keys are deleted, tombstones left
		}
		// Each lock has its key, its fence counter, its trail and its
		// data marker.
		if size := node.Client().DBSize(context.Background()).Val(); size != 4*n {
			t.Errorf("node %d holds %d keys, want %d", i, size, 4*n)
		}
	}
}

// TestMeasureHeld10k reports CPU time and round trips per second of 10,000
// locks kept alive on 3 real nodes, for QUORUMLOCK_MEASURE_HELD (a duration,
// e.g. 30s). Run it without -race:
//
//	QUORUMLOCK_MEASURE_HELD=30s go test -run TestMeasureHeld10k -v ./redlock/
func TestMeasureHeld10k(t *testing.T) {
	t.Parallel()
	d, err := time.ParseDuration(os.Getenv("QUORUMLOCK_MEASURE_HELD"))
	if err != nil {
		t.Skip("set QUORUMLOCK_MEASURE_HELD=30s to measure")
	}
	const n = 10000
	for _, ttl := range []time.Duration{10 * time.Second, 30 * time.Second} {
		t.Run(ttl.String(), func(t *testing.T) {
			_, _, counters, _ := heldSetup(t, n, ttl)
			time.Sleep(ttl) // past the acquisition burst and the first rounds
			for _, r := range counters {
				r.reset()
				r.on.Store(true)
			}
			cpu0, began := cpuTime(), time.Now()
			time.Sleep(d)
			cpu, elapsed := cpuTime()-cpu0, time.Since(began)
			for _, r := range counters {
				r.on.Store(false)
			}
			t.Logf("10,000 locks, ttl %s, %s: process CPU %s (%.1f%% of one core)", ttl, elapsed.Round(time.Millisecond), cpu.Round(time.Millisecond), 100*cpu.Seconds()/elapsed.Seconds())
			for i, r := range counters {
				t.Logf("node %d: %.1f round trips/s (pipelines), %.0f extensions/s, %d single evals",
					i, float64(r.pipelines.Load())/elapsed.Seconds(), float64(r.piped.Load())/elapsed.Seconds(), r.singles.Load())
			}
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
