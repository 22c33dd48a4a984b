package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/redlock"
)

// The scale scenario runs quorumlock (go-redis node) alone on 5 nodes, in
// databases no other scenario uses, so that DBSIZE counts only its keys.
// scaleHeldTTL is the TTL of the held locks (flag -scale-ttl). By default
// long enough that none falls due for extension while the scenario runs
// (the extension traffic of many kept locks is the held scenario's
// measure); the heap figure is that of locks registered with the watchdog.
// A short one (20s) shows whether the watchdog keeps up while locks keep
// arriving.
var scaleHeldTTL = 2 * time.Minute

const (
	scaleKeys      = 100_000
	scaleDB        = 1 // part (a): keys acquired and released
	scaleHeldDB    = 2 // part (b): locks held and kept alive
	scaleRetention = 3 * time.Second
	// scaleTTL is the TTL of the locks of part (a); a released lock's
	// tombstone lives this long, the fence counter scaleRetention.
	scaleTTL = scaleRetention
	// scaleDrainLimit bounds the wait for the key count to come back, past
	// the moment the last key can have expired.
	scaleDrainLimit = time.Minute
	scaleGoroutines = 32
)

// scaleHeldCounts are the numbers of held locks whose heap is measured.
var scaleHeldCounts = []int{10_000, scaleKeys}

// scaleClient is a quorumlock client whose go-redis clients use database db.
func scaleClient(addrs []string, db int, opts ...redlock.Option) (*redlock.Client, []*redis.Client, error) {
	cs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		cs[i] = redis.NewClient(&redis.Options{Addr: a, DB: db, DialTimeout: 500 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true})
	}
	c, err := redlock.New(qlNodes(cs), append([]redlock.Option{redlock.WithKeyPrefix("bench:scale:")}, opts...)...)
	if err != nil {
		for _, rc := range cs {
			_ = rc.Close()
		}
		return nil, nil, err
	}
	return c, cs, nil
}

func closeScale(c *redlock.Client, cs []*redis.Client) {
	_ = c.Close()
	for _, rc := range cs {
		_ = rc.Close()
	}
}

// dbSize sums DBSIZE over the nodes (of each client's database).
func dbSize(ctx context.Context, cs []*redis.Client) (int64, error) {
	var sum int64
	for _, c := range cs {
		n, err := c.DBSize(ctx).Result()
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// forEach calls f(i) for i in [from, to) on g goroutines; it stops at the
// first error and returns it.
func forEach(ctx context.Context, from, to, g int, f func(i int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(to))
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// scenarioScale: (a) 100,000 distinct keys acquired and released leave the
// nodes' key count back at its start once tombstones and fence counters
// have expired (an error of the run if not); (b) Go heap per lock at 10,000
// and 100,000 locks held and kept alive by the client's watchdog.
func scenarioScale(e *env) error {
	if !e.want(libQL) {
		return nil
	}
	addrs := e.addrs[:5]
	if err := scaleKeyCount(e, addrs); err != nil {
		return err
	}
	return scaleHeldMemory(e, addrs)
}

func scaleKeyCount(e *env, addrs []string) error {
	c, cs, err := scaleClient(addrs, scaleDB, redlock.WithFenceRetention(scaleRetention),
		redlock.WithRecoveryPeriod(0)) // markers outlive their last touch by the recovery period: off, they expire with the retention
	if err != nil {
		return err
	}
	defer closeScale(c, cs)
	k, err := cycleKeys(e.ctx, c, cs, scaleKeys, scaleTTL, scaleRetention, scaleDrainLimit)
	if err != nil {
		return err
	}
	progress("scale: %d keys acquired and released in %s (%d releases failed); keys on the nodes: %d before, %d right after, %d %s after the last release",
		scaleKeys, k.cycles.Round(time.Millisecond), k.releaseErrs, k.before, k.afterRelease, k.final, k.drained.Round(time.Millisecond))
	printTop(k.errSample, "release: ")
	m := []harness.Metric{
		{Unit: "ns/op", Value: float64(k.cycles.Nanoseconds()) / scaleKeys},
		{Unit: "keys-before", Value: float64(k.before)},
		{Unit: "keys-after-release", Value: float64(k.afterRelease)},
		{Unit: "keys-after-expiry", Value: float64(k.final)},
		{Unit: "expiry-s", Value: k.drained.Seconds()},
		{Unit: "release-errors", Value: float64(k.releaseErrs)},
	}
	e.add("Scale", fmt.Sprintf("keys=%d/retention=%s", scaleKeys, scaleRetention), libQL, harness.Rep{N: scaleKeys, Metrics: m})
	if !k.back() && e.ctx.Err() == nil {
		e.errs = append(e.errs, fmt.Errorf("scale: %d keys acquired and released left %d keys on the nodes %s after the last release (%d before)",
			scaleKeys, k.final, k.drained.Round(time.Millisecond), k.before))
	}
	return nil
}

// keyCount is what cycleKeys saw of the nodes' key count.
type keyCount struct {
	before, afterRelease, final int64
	cycles, drained             time.Duration // all cycles; from the last release to final
	releaseErrs                 int64
	errSample                   map[string]int
}

// back reports whether the key count came back to where it started.
func (k keyCount) back() bool { return k.final <= k.before }

// cycleKeys acquires and releases n distinct keys with c (ttl), then polls
// the summed DBSIZE of cs until it is back at its start, for at most limit
// past the moment the last tombstone (ttl) and fence counter (retention) can
// have expired. A failed acquisition is an error; a failed release is counted
// (its keys expire anyway).
func cycleKeys(ctx context.Context, c *redlock.Client, cs []*redis.Client, n int, ttl, retention, limit time.Duration) (k keyCount, err error) {
	if k.before, err = dbSize(ctx, cs); err != nil {
		return k, err
	}
	keys := keyRing("k", n)
	var (
		failed atomic.Int64
		mu     sync.Mutex
	)
	k.errSample = map[string]int{}
	t0 := time.Now()
	err = forEach(ctx, 0, n, scaleGoroutines, func(i int) error {
		l, err := c.Acquire(ctx, keys[i], ttl)
		if err != nil {
			return fmt.Errorf("acquire %s: %w", keys[i], err)
		}
		if err := l.Release(ctx); err != nil {
			failed.Add(1)
			mu.Lock()
			k.errSample[strings.ReplaceAll(errLine(err, 160), keys[i], "KEY")]++
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return k, err
	}
	released := time.Now()
	k.cycles, k.releaseErrs = released.Sub(t0), failed.Load()
	if k.afterRelease, err = dbSize(ctx, cs); err != nil {
		return k, err
	}
	deadline := released.Add(max(ttl, retention) + limit)
	k.final = k.afterRelease
	for !k.back() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		if k.final, err = dbSize(ctx, cs); err != nil {
			return k, err
		}
	}
	k.drained = time.Since(released)
	return k, nil
}

// heapAfterGC is the live Go heap.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func scaleHeldMemory(e *env, addrs []string) error {
	c, cs, err := scaleClient(addrs, scaleHeldDB)
	if err != nil {
		return err
	}
	ctx := e.ctx
	defer func() {
		// The held locks are not released one by one: the client's Close
		// stops the watchdog, and they go with their database.
		_ = c.Close()
		for _, rc := range cs {
			_ = rc.FlushDB(context.WithoutCancel(ctx)).Err()
			_ = rc.Close()
		}
	}()
	keys := keyRing("h", scaleKeys)
	locks := make([]*redlock.Lock, scaleKeys) // allocated before the baseline
	// Warm up: fill the connection pools and the watchdog's first state.
	if err := forEach(ctx, 0, 1000, scaleGoroutines, func(i int) error {
		l, err := c.Acquire(ctx, fmt.Sprintf("w%d", i), scaleHeldTTL)
		if err != nil {
			return err
		}
		l.KeepAlive()
		return l.Release(ctx)
	}); err != nil {
		return err
	}
	base := heapAfterGC()
	held := 0
	var (
		failed    atomic.Int64
		mu        sync.Mutex
		errSample = map[string]int{}
	)
	var took time.Duration
	for _, n := range scaleHeldCounts {
		t0 := time.Now()
		err := forEach(ctx, held, n, scaleGoroutines, func(i int) error {
			l, err := c.Acquire(ctx, keys[i], scaleHeldTTL)
			if err != nil {
				// Counted and shown, not fatal: the others are still held.
				failed.Add(1)
				mu.Lock()
				errSample[errLine(err, 160)]++
				mu.Unlock()
				return nil
			}
			l.KeepAlive() // right after Acquire, as a user would
			locks[i] = l
			return nil
		})
		if err != nil {
			return err
		}
		held = n
		took += time.Since(t0)
		heap := heapAfterGC()
		count, extended, lost := 0, 0, 0
		for _, l := range locks[:n] {
			switch {
			case l == nil:
			case l.Err() != nil:
				lost++
			case l.ValidUntil().Sub(l.AcquiredAt()) > scaleHeldTTL:
				extended++
			}
			if l != nil {
				count++
			}
		}
		perLock := (float64(heap) - float64(base)) / float64(max(count, 1))
		m := []harness.Metric{
			{Unit: "ns/op", Value: float64(took.Nanoseconds()) / float64(n)},
			{Unit: "heap-B/lock", Value: perLock},
			{Unit: "extended", Value: float64(extended)},
			{Unit: "lost", Value: float64(lost)},
			{Unit: "acquire-errors", Value: float64(failed.Load())},
			{Unit: "acquire-s", Value: took.Seconds()},
		}
		e.add("Scale", fmt.Sprintf("held=%d/ttl=%s", n, scaleHeldTTL), libQL, harness.Rep{N: n, Metrics: m})
		progress("scale: %d locks held under KeepAlive (acquired and kept in %s, %d acquisitions failed): Go heap %.0f B per lock; %d extended at least once, %d lost",
			count, took.Round(time.Millisecond), failed.Load(), perLock, extended, lost)
		mu.Lock()
		printTop(errSample, "")
		mu.Unlock()
	}
	return nil
}

// scalePanels: the heap per held lock (the key counts are in the summary
// and results.json).
func scalePanels(rp *harness.Report, sc string) []harness.Panel {
	return []harness.Panel{
		dropEmpty(panel(rp, sc, "heap-B/lock", "Client Go heap per held, kept lock", "bytes", 1, false)),
	}
}

// scaleRatios: the key count must come back (DB scaleDB starts empty on the
// bench's fresh nodes); the heap per lock has no target.
func scaleRatios(abs absRatio) {
	abs("scale: keys left on the nodes after 100,000 acquire+release, once expired", "Scale",
		fmt.Sprintf("keys=%d/retention=%s", scaleKeys, scaleRetention), libQL, "keys-after-expiry", "==", 0, "")
	for _, n := range scaleHeldCounts {
		abs(fmt.Sprintf("scale: Go heap bytes per held lock under KeepAlive, %d locks", n), "Scale",
			fmt.Sprintf("held=%d/ttl=%s", n, scaleHeldTTL), libQL, "heap-B/lock", "", 0, "")
	}
}
