package redlock_test

// Fences on real redis-server nodes: fences keep growing across data loss
// whatever the clients' clocks say, fence counters expire when their key is
// idle, and one client's lock names never collide with another's counters.
// The Redis Cluster part is in cluster_mode_test.go.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// skewedClock is a wall clock that is off by skew.
func skewedClock(skew time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(skew) }
}

// fenceWithClock acquires and releases key with a fresh client whose wall
// clock is off by skew, and returns the acquisition's fence. The client is
// closed before it returns, so none of its requests is in flight when the
// caller restarts nodes.
func fenceWithClock(t *testing.T, nodes []node.Node, key string, skew time.Duration) uint64 {
	t.Helper()
	// Recovery off: restarts come faster than any recovery period here,
	// and what is checked is the fences' order, which needs none.
	c := newClient(t, nodes, redlock.WithNodeTimeout(slowNodeTimeout), redlock.WithWallClock(skewedClock(skew)), redlock.WithRecoveryPeriod(0))
	defer func() { _ = c.Close() }()
	ctx := ctxFor(t)
	l, err := c.Acquire(ctx, key, longTTL)
	if err != nil {
		t.Fatalf("clock %+v: acquire %q: %v", skew, key, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("clock %+v: release %q: %v", skew, key, err)
	}
	return l.Fence()
}

// restartEmpty restarts the given nodes (all of them when none are given),
// in parallel, and checks that each came back empty.
func restartEmpty(t *testing.T, cl *redistest.Cluster, which ...int) {
	t.Helper()
	if len(which) == 0 {
		for i := range cl.Nodes() {
			which = append(which, i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	errs := make([]error, len(which))
	var wg sync.WaitGroup
	for k, i := range which {
		wg.Go(func() { errs[k] = cl.Nodes()[i].Restart(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("restart nodes %v: %v", which, err)
	}
	for _, i := range which {
		n, err := cl.Nodes()[i].Client().DBSize(ctx).Result()
		if err != nil || n != 0 {
			t.Fatalf("node %d after restart: dbsize %d, %v; want an empty server", i, n, err)
		}
	}
}

// TestFenceSkewedClocksAfterDataLoss: a fence handed out by a client whose
// clock is 60 s fast (or a correct client's, before a client 60 s slow) must
// stay below every later fence of the key after all nodes lost their data.
// On the old design a missing counter started from the acquiring client's
// wall clock, so the fence went back by the skew.
func TestFenceSkewedClocksAfterDataLoss(t *testing.T) {
	t.Parallel()
	const skew = 60 * time.Second
	for _, tc := range []struct {
		name  string
		skews []time.Duration // the clock of each acquisition's client, in order
	}{
		{"fast-then-correct", []time.Duration{+skew, 0}},
		{"correct-then-slow", []time.Duration{0, -skew}},
		{"slow-then-correct", []time.Duration{-skew, 0}},
		{"fast-then-slow", []time.Duration{+skew, -skew}},
		{"mixed", []time.Duration{+skew, -skew, 0, +skew, 0, -skew, -skew, +skew, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := startCluster(t, 3)
			nodes := nodesOf(cl)
			key := uniqueKey(t)
			var fences []uint64
			for i, s := range tc.skews {
				if i > 0 {
					restartEmpty(t, cl) // every node lost the key's counter
				}
				f := fenceWithClock(t, nodes, key, s)
				t.Logf("acquisition %d: clock %+v, fence %d", i, s, f)
				for j, prev := range fences {
					if f <= prev {
						t.Fatalf("acquisition %d (clock %+v) after all nodes restarted empty got fence %d, not above acquisition %d's fence %d (clock %+v); fences so far %v",
							i, s, f, j, prev, tc.skews[j], fences)
					}
				}
				fences = append(fences, f)
			}
		})
	}
}

// TestFenceSkewedClocksOneNodeRestart: one node at a time restarts empty
// (rolling, as an operator would), between acquisitions by clients whose
// clocks are 60 s fast, 60 s slow or correct: every fence is above all
// earlier ones.
func TestFenceSkewedClocksOneNodeRestart(t *testing.T) {
	t.Parallel()
	const skew = 60 * time.Second
	cl := startCluster(t, 3)
	nodes := nodesOf(cl)
	key := uniqueKey(t)
	skews := []time.Duration{+skew, 0, -skew, +skew, -skew, 0, 0, +skew, -skew, 0}
	var fences []uint64
	for i, s := range skews {
		if i > 0 {
			restartEmpty(t, cl, (i-1)%3)
		}
		f := fenceWithClock(t, nodes, key, s)
		t.Logf("acquisition %d: clock %+v, fence %d", i, s, f)
		for j, prev := range fences {
			if f <= prev {
				t.Fatalf("acquisition %d (clock %+v) after node %d restarted empty got fence %d, not above acquisition %d's fence %d (clock %+v); fences so far %v",
					i, s, (i-1)%3, f, j, prev, skews[j], fences)
			}
		}
		fences = append(fences, f)
	}
}

// TestFenceCountersExpireWhenIdle: with WithFenceRetention(2s), the fence
// counters (and the tombstones that releases leave for one TTL) of 50 idle
// keys expire, and every node's key count goes back to zero. On the old
// design one counter per key stayed forever. A key acquired again after
// its counter expired still gets a larger fence than before (the counter
// starts again from the clock).
func TestFenceCountersExpireWhenIdle(t *testing.T) {
	t.Parallel()
	const (
		keys      = 50
		ttl       = 2 * time.Second // tombstones live one TTL
		retention = 2 * time.Second
		hangGuard = 60 * time.Second
	)
	cl := startCluster(t, 3)
	// (The recovery period must cover the TTL.)
	c := newClient(t, nodesOf(cl), redlock.WithFenceRetention(retention), redlock.WithRecoveryPeriod(retention),
		redlock.WithNodeTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard+time.Minute) // outlives the hang guard
	defer cancel()
	fences := make(map[string]uint64, keys)
	var names []string
	expiring := 0 // counters seen with an expiry right after their acquisition
	for i := range keys {
		key := fmt.Sprintf("%s-%d", t.Name(), i)
		l, err := c.TryAcquire(ctx, key, ttl)
		if err != nil {
			t.Fatalf("acquire %q: %v", key, err)
		}
		fences[key] = l.Fence()
		names = append(names, key)
		counter := c.KeyName(key) // the record keeps the counter
		for j, n := range cl.Nodes() {
			pttl, err := n.Client().PTTL(ctx, counter).Result()
			switch {
			case err != nil:
				t.Fatalf("node %d: pttl %s: %v", j, counter, err)
			case pttl == -1:
				t.Fatalf("node %d: counter %s of key %q has no expiry", j, counter, key)
			case pttl > retention:
				t.Fatalf("node %d: counter %s of key %q expires in %v, after the retention %v", j, counter, key, pttl, retention)
			case pttl > 0:
				expiring++
			}
			// -2: gone already (a stall here outlasted the retention), or
			// this node's acquire is still on its way.
		}
		// The lock only expires early if this machine stalls for a whole
		// TTL; then its key is gone anyway, which is what this test waits for.
		if err := l.Release(ctx); err != nil && !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("release %q: %v", key, err)
		}
	}
	if err := c.Close(); err != nil { // no request of ours is still on its way
		t.Fatal(err)
	}
	if expiring == 0 { // else an empty server would prove nothing
		t.Fatal("no fence counter was ever seen on a node")
	}

	start := time.Now()
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		total := int64(0)
		for i, n := range cl.Nodes() {
			got, err := n.Client().DBSize(ctx).Result()
			if err != nil {
				t.Fatalf("node %d: dbsize: %v", i, err)
			}
			total += got - 1 // the server's standing record stays
		}
		if total == 0 {
			break
		}
		select {
		case <-guard.C:
			t.Fatalf("hang guard: %d keys still on the nodes %v after the last release (fence retention %v, ttl %v):%s",
				total, hangGuard, retention, ttl, dumpKeys(ctx, cl))
		case <-tick.C:
		}
	}
	t.Logf("all %d nodes empty %v after the last release", len(cl.Nodes()), time.Since(start).Round(time.Millisecond))

	// Acquire some of the keys again: their counters start over, above the
	// fences handed out before.
	c2 := newClient(t, nodesOf(cl), redlock.WithFenceRetention(retention), redlock.WithNodeTimeout(slowNodeTimeout))
	for _, key := range []string{names[0], names[keys/2], names[keys-1]} {
		l, err := c2.Acquire(ctx, key, longTTL)
		if err != nil {
			t.Fatalf("acquire %q again: %v", key, err)
		}
		if l.Fence() <= fences[key] {
			t.Fatalf("%q: fence %d after its counter expired is not above its earlier fence %d", key, l.Fence(), fences[key])
		}
		t.Logf("%q: fence %d before expiry, %d after", key, fences[key], l.Fence())
		// The new counter expires too: its expiry is the retention, or the
		// lock's TTL while it is held, when longer.
		counter := c2.KeyName(key) // the record keeps the counter
		for i, n := range cl.Nodes() {
			pttl, err := n.Client().PTTL(ctx, counter).Result()
			if err != nil {
				t.Fatalf("node %d: pttl %s: %v", i, counter, err)
			}
			// -2: this node's acquire may still be on its way (Acquire
			// returns at a majority); -1 would be a counter that never expires.
			if pttl == -1 || pttl > max(retention, longTTL) {
				t.Fatalf("node %d: counter %s has pttl %v; want at most the retention %v or the TTL %v", i, counter, pttl, retention, longTTL)
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %q: %v", key, err)
		}
	}
}

// TestFencePrefixesDoNotCollide: client A (prefix "lock:a:") holds key
// "fence" while client B (prefix "lock:") takes and releases key "a" again
// and again, and the other way round. On the old design A's lock key was
// B's fence counter ("lock:a:fence"): B's acquisitions failed, or A could
// not acquire at all.
func TestFencePrefixesDoNotCollide(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	a := newClient(t, nodesOf(cl), redlock.WithKeyPrefix("lock:a:"), redlock.WithNodeTimeout(slowNodeTimeout))
	b := newClient(t, nodesOf(cl), redlock.WithKeyPrefix("lock:"), redlock.WithNodeTimeout(slowNodeTimeout))
	ctx := ctxFor(t)

	aName, bName := a.KeyName("fence"), b.KeyName("a")
	all := map[string]string{
		"A's lock": aName, "A's counter": wire.CounterKey(aName),
		"B's lock": bName, "B's counter": wire.CounterKey(bName),
	}
	seen := map[string]string{}
	for what, name := range all {
		if other, dup := seen[name]; dup {
			t.Fatalf("%s and %s are both %q", what, other, name)
		}
		seen[name] = what
	}

	// holdAndCycle: first holds its key while second acquires, extends and
	// releases its own five times, with growing fences.
	holdAndCycle := func(t *testing.T, first *redlock.Client, firstKey string, second *redlock.Client, secondKey string) {
		held, err := first.TryAcquire(ctx, firstKey, 30*time.Second)
		if err != nil {
			t.Fatalf("acquire %q: %v", first.KeyName(firstKey), err)
		}
		var prev uint64
		for i := range 5 {
			l, err := second.TryAcquire(ctx, secondKey, 30*time.Second)
			if err != nil {
				t.Fatalf("round %d: acquire %q while %q is held: %v", i, second.KeyName(secondKey), first.KeyName(firstKey), err)
			}
			if l.Fence() <= prev {
				t.Fatalf("round %d: fence %d of %q is not above the previous %d", i, l.Fence(), second.KeyName(secondKey), prev)
			}
			prev = l.Fence()
			if err := l.Extend(ctx, 30*time.Second); err != nil {
				t.Fatalf("round %d: extend %q: %v", i, second.KeyName(secondKey), err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("round %d: release %q: %v", i, second.KeyName(secondKey), err)
			}
		}
		// The first lock was never disturbed.
		settled(t, cl, first.KeyName(firstKey), held.Token())
		if err := held.Extend(ctx, 30*time.Second); err != nil {
			t.Fatalf("extend %q after the other client's rounds: %v", first.KeyName(firstKey), err)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatalf("release %q: %v", first.KeyName(firstKey), err)
		}
	}
	t.Run("A-holds", func(t *testing.T) { holdAndCycle(t, a, "fence", b, "a") })
	t.Run("B-holds", func(t *testing.T) { holdAndCycle(t, b, "a", a, "fence") })
}

// Rule 8 under contention: 1,000 acquisitions by several clients, with
// single attempts that lose and leave the nodes' counters uneven, still get
// strictly increasing fences in acquisition order. Counted in acquisitions:
// the context is only a hang guard.
func TestFenceStrictlyIncreasesAcrossClients(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	var cs []*redlock.Client
	for range 4 {
		cs = append(cs, newClient(t, nodesOf(cl), redlock.WithNodeTimeout(5*time.Second)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	key := uniqueKey(t)
	var (
		mu      sync.Mutex
		fences  []uint64
		lost    atomic.Int32
		wg      sync.WaitGroup
		claimed atomic.Int32
	)
	for i := range 12 {
		c := cs[i%len(cs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for claimed.Load() < 1000 {
				l, err := c.TryAcquire(ctx, key, 30*time.Second)
				if errors.Is(err, redlock.ErrNotAcquired) {
					lost.Add(1)
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				claimed.Add(1)
				mu.Lock() // uncontended: the lock is ours; this only orders the slice for the race detector
				fences = append(fences, l.Fence())
				mu.Unlock()
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d after %d at acquisition %d", fences[i], fences[i-1], i)
		}
	}
	if len(fences) < 1000 {
		t.Fatalf("ran out of time (hang guard %s) after %d of 1000 acquisitions (%d lost attempts); fences increasing", hangGuard, len(fences), lost.Load())
	}
	if lost.Load() == 0 {
		t.Log("no attempt lost: the counters never diverged in this run")
	}
	t.Logf("%d acquisitions, %d lost attempts, last fence %d", len(fences), lost.Load(), fences[len(fences)-1])
}

// The fence comes from the nodes, not from the client: a fresh client on
// the same nodes continues the sequence.
func TestFenceContinuesAcrossClients(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := context.Background()
	key := uniqueKey(t)
	var last uint64
	for range 3 {
		c := newClient(t, nodesOf(cl))
		l, err := c.TryAcquire(ctx, key, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence() <= last {
			t.Fatalf("fence %d after %d", l.Fence(), last)
		}
		last = l.Fence()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Rule 8: counters that drifted apart (an attempt that lost still counted
// on the nodes it reached) must not let a later acquisition on another
// majority get a smaller fence.
func TestRuleFenceSurvivesDivergedCounters(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	name := c.KeyName(key)
	const ahead = 1 << 52 // above any clock-seeded counter of the other nodes
	setCount(t, ctx, cl.Nodes()[2].Client(), name, ahead)
	// Node 0 is busy, so the first acquisition is decided by nodes 1 and 2:
	// node 2's counter is the maximum, node 1's lags behind it.
	setOn(t, cl, name, "other", 10*time.Second, 0)
	first, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if first.Fence() != ahead+1 {
		t.Fatalf("first fence %d, want %d (the maximum)", first.Fence(), uint64(ahead+1))
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[0].Client().Del(ctx, name).Err(); err != nil {
		t.Fatal(err)
	}
	// The next majority, nodes 0 and 1, does not include node 2. Only if
	// node 1 was raised to the first fence does it count above it.
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	second, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if second.Fence() <= first.Fence() {
		t.Fatalf("fence went from %d to %d on the other majority", first.Fence(), second.Fence())
	}
	_ = second.Release(ctx)
}

// TookOver's Fence when the nodes' counters drifted apart (nodes 0 and 1
// counted far more acquisitions than node 2). The holder's acquisition is
// decided on nodes 0 and 1; node 2 grants it after that, with its own,
// much lower count in its trail. The holder dies; another client's attempt
// won node 1 and was undone there, taking the trail with it; the successor
// is decided on nodes 1 and 2, so node 2's trail is the only one it finds.
// When the holder extended its lock once (as every kept-alive lock does),
// the extension raised node 2's trail to the holder's fence, and TookOver
// reports at least that fence. When it never extended, TookOver reports
// node 2's own count: the limit its doc states.
func TestTookOverFenceWithDriftingCounters(t *testing.T) {
	t.Parallel()
	for _, extended := range []bool{true, false} {
		t.Run(map[bool]string{true: "extended", false: "never-extended"}[extended], func(t *testing.T) {
			cl := startCluster(t, 3)
			ctx := ctxFor(t)
			key := uniqueKey(t)
			real := nodesOf(cl)
			gate := make(chan struct{})
			holderClient := newClient(t, []node.Node{real[0], real[1], lateAnswerNode{real[2].(Node), gate}},
				redlock.WithOwner("holder"), redlock.WithNodeTimeout(testNodeTimeout))
			name := holderClient.KeyName(key)
			for i, count := range []int{1_000_000, 1_000_000, 100} {
				setCount(t, ctx, cl.Clients()[i], name, uint64(count))
			}
			held, err := holderClient.TryAcquire(ctx, key, time.Minute)
			close(gate)
			if err != nil {
				t.Fatal(err)
			}
			if held.Fence() != 1_000_001 {
				t.Fatalf("holder's fence %d, want 1000001 (decided on nodes 0 and 1)", held.Fence())
			}
			for holders(t, cl, name)[2] != held.Token() && ctx.Err() == nil { // node 2's late grant
				time.Sleep(5 * time.Millisecond)
			}
			if extended {
				if err := held.Extend(ctx, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			_ = holderClient.Close()          // dies without Release; Close waits for its requests in flight
			for _, rc := range cl.Clients() { // its hold expires (ended rather than waited for)
				expireHold(t, ctx, rc, name)
			}
			undoneAttempt(t, ctx, real[1], name)

			gate = make(chan struct{})
			successorClient := newClient(t, []node.Node{lateAnswerNode{real[0].(Node), gate}, real[1], real[2]},
				redlock.WithOwner("successor"), redlock.WithNodeTimeout(testNodeTimeout))
			l, err := successorClient.TryAcquire(ctx, key, time.Minute)
			close(gate)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			prev, ok := l.TookOver()
			if !ok || prev.Holder != node.ReleaseID(held.Token()) || prev.Fence >= l.Fence() {
				t.Fatalf("TookOver = %+v, %v; want the holder's lock, fence below ours (%d)", prev, ok, l.Fence())
			}
			if extended && prev.Fence < held.Fence() {
				t.Fatalf("TookOver's fence %d, below the extended holder's %d", prev.Fence, held.Fence())
			}
			if !extended && prev.Fence != 101 {
				t.Fatalf("TookOver's fence %d, want node 2's own count 101 (the documented limit)", prev.Fence)
			}
		})
	}
}

// undoneAttempt is another client's attempt that won node nd, and was
// undone there (it lost elsewhere): it replaced the trail, then released it.
func undoneAttempt(t *testing.T, ctx context.Context, nd node.Node, name string) {
	t.Helper()
	const token = "0123456789abcdef0123456789abcdef"
	r, err := nd.Acquire(ctx, node.AcquireArgs{Name: name, Token: token, TTL: time.Minute})
	if err != nil || !r.Acquired {
		t.Fatalf("the other attempt's acquire on the node = %+v, %v", r, err)
	}
	if ok, err := nd.Release(ctx, node.ReleaseArgs{Name: name, Token: token}); err != nil || !ok {
		t.Fatalf("the other attempt's undo = %v, %v", ok, err)
	}
}
