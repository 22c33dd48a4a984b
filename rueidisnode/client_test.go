package rueidisnode_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// The client tests run a redlock.Client over rueidis nodes on real
// redis-servers. Their time limits are hang guards only: node timeouts of
// 2 s (newClient) and TTLs of 10 s or more, so that a slow machine makes
// them slow, not failing.
const hangGuard = 2 * time.Minute

// A Client over 5 rueidis nodes: acquire, extend, release, acquire again
// with a higher fence.
func TestClientCycle(t *testing.T) {
	cl := redistest.StartT(t, 5)
	c := newClient(t, nodesOf(t, cl))
	ctx := ctxWithin(t, hangGuard)
	key := lockKey(t)
	l, err := c.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence() == 0 || l.Remaining() <= 0 || l.Key() != key {
		t.Fatalf("lock %q fence %d remaining %s", l.Key(), l.Fence(), l.Remaining())
	}
	// A majority of the servers hold one token under prefix{key}.
	count := map[string]int{}
	for _, tok := range tokensOn(t, ctx, cl, keyName(key)) {
		if tok != "" {
			count[tok]++
		}
	}
	if len(count) != 1 {
		t.Fatalf("servers hold %v under %s, want one token", count, keyName(key))
	}
	for tok, n := range count {
		if n < 3 {
			t.Fatalf("token %s on %d servers, want a majority (3 of 5)", tok, n)
		}
	}
	if _, err := c.TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a held key acquired again: %v, want ErrNotAcquired", err)
	}
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if l.Remaining() <= 10*time.Second {
		t.Fatalf("lock extended to a minute has %s left", l.Remaining())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("second release: %v, want ErrLockLost", err)
	}
	l2, err := c.TryAcquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Fence() <= l.Fence() {
		t.Fatalf("fence %d not above %d", l2.Fence(), l.Fence())
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Mutual exclusion under contention: goroutines of several Clients
// increment a shared counter with a read, a sleep and a write under the
// lock; the count is exact only if no two were ever inside at once.
func TestMutualExclusion(t *testing.T) {
	const (
		clients    = 3
		goroutines = 8
		rounds     = 10
	)
	cl := redistest.StartT(t, 5)
	var cs []*redlock.Client
	for range clients {
		// Retries enough never to run out while 7 others take their turns
		// on a slow machine; the context is the hang guard.
		cs = append(cs, newClient(t, nodesOf(t, cl), redlock.WithRetry(retry.Constant(1_000_000, 5*time.Millisecond, 5*time.Millisecond))))
	}
	ctx := ctxWithin(t, hangGuard)
	key := lockKey(t)
	var counter, inside, overlaps atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds)
	for g := range goroutines {
		c := cs[g%clients]
		wg.Go(func() {
			for range rounds {
				l, err := c.Acquire(ctx, key, 10*time.Second)
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				v := counter.Load()
				time.Sleep(time.Millisecond)
				counter.Store(v + 1)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d overlapping critical sections", n)
	}
	if got := counter.Load(); got != goroutines*rounds {
		t.Fatalf("counter = %d, want %d: two holders at once", got, goroutines*rounds)
	}
}

// A node killed and restarted comes back empty, without its script cache:
// every script meets NOSCRIPT and runs by EVAL, and the Client keeps
// working (on the other nodes while it is down, and with the restarted one
// when it is needed for a majority).
func TestNodeKilledAndRestarted(t *testing.T) {
	cl := redistest.StartT(t, 5)
	nodes := nodesOf(t, cl)
	// Recovery off: the restarted node must vote at once, as it is what
	// this test is about (its client reconnects; see the redlock tests for
	// the sit-out).
	c := newClient(t, nodes, redlock.WithRecoveryPeriod(0))
	ctx := ctxWithin(t, hangGuard)
	cycle := func(what string) {
		t.Helper()
		l, err := c.Acquire(ctx, lockKey(t), 10*time.Second)
		if err != nil {
			t.Fatalf("%s: acquire: %v", what, err)
		}
		if err := l.Extend(ctx, 10*time.Second); err != nil {
			t.Fatalf("%s: extend: %v", what, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", what, err)
		}
	}
	cycle("healthy")
	victim := cl.Nodes()[0]
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	cycle("one node down")
	if err := victim.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	// The restarted server has no script cached.
	s := wire.Scripts()
	var shas []string
	for _, src := range []string{s.Acquire, s.Extend, s.Release, s.RaiseFence, s.Inspect} {
		sum := sha1.Sum([]byte(src))
		shas = append(shas, hex.EncodeToString(sum[:]))
	}
	cached := func() []bool {
		t.Helper()
		exists, err := victim.Client().ScriptExists(ctx, shas...).Result()
		if err != nil {
			t.Fatal(err)
		}
		return exists
	}
	for i, ok := range cached() {
		if ok {
			t.Fatalf("script %d (%s) cached on a server that just restarted", i, shas[i])
		}
	}

	// The node alone, on each script: the first call of each meets
	// NOSCRIPT. rueidis meets its dead connections one call at a time
	// before it has redialled them all: wait for a run of answers.
	n := nodes[0]
	in := n.(node.Inspector)
	name := keyName(lockKey(t))
	await(t, "the restarted node to answer", hangGuard, func() bool {
		for range 20 {
			if _, err := in.Inspect(ctx, name); err != nil {
				return false
			}
		}
		return true
	})
	seed := uint64(time.Now().UnixMicro())
	a, err := n.Acquire(ctx, node.AcquireArgs{Name: name, Token: "tok", TTL: 10 * time.Second, Seed: seed})
	// The seed starts the missing counter, or the server's clock does if
	// the request took over node.MaxSeedSkew to arrive: either way above it.
	if err != nil || !a.Acquired || a.Fence <= seed {
		t.Fatalf("acquire on the restarted node = %+v, %v; want acquired with a fence above the seed %d", a, err, seed)
	}
	res, err := n.Extend(ctx, []node.ExtendArgs{{Name: name, Token: "tok", TTL: 10 * time.Second, Fence: a.Fence}})
	if err != nil || len(res) != 1 || res[0] != node.Extended {
		t.Fatalf("extend = %v, %v", res, err)
	}
	if held, err := n.RaiseFence(ctx, name, "tok", a.Fence+7, 0); err != nil || !held {
		t.Fatalf("raise fence = %v, %v", held, err)
	}
	if h, err := in.Inspect(ctx, name); err != nil || h.Token != "tok" || h.Fence != a.Fence+7 {
		t.Fatalf("inspect = %+v, %v; want tok with fence %d", h, err, a.Fence+7)
	}
	if ok, err := n.Release(ctx, node.ReleaseArgs{Name: name, Token: "tok", Tombstone: 10 * time.Second}); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	for i, ok := range cached() {
		if !ok {
			t.Fatalf("script %d (%s) not cached after its EVAL", i, shas[i])
		}
	}

	cycle("after the restart")
	// Every live node is needed now: the restarted one must take part.
	if err := cl.Nodes()[1].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	cycle("two other nodes down")
}

// A waiter whose retry policy sleeps 10 minutes wakes on the holder's
// release: without the notification it could not get the lock within the
// hang guard (the holder's TTL is 10 minutes too).
func TestReleaseNotificationWakesWaiter(t *testing.T) {
	cl := redistest.StartT(t, 3)
	holder := newClient(t, nodesOf(t, cl))
	obs := &eventCounter{}
	waiter := newClient(t, nodesOf(t, cl), redlock.WithRetry(retry.Constant(5, 10*time.Minute, 0)), redlock.WithObserver(obs))
	ctx := ctxWithin(t, hangGuard)
	key := lockKey(t)
	held, err := holder.Acquire(ctx, key, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := waiter.Acquire(ctx, key, 10*time.Second)
		done <- result{l, err}
	}()
	await(t, "the waiter's first lost attempt", hangGuard, func() bool { return obs.get(observe.Contended) > 0 })
	// An announcement published before a server registered the waiter's
	// subscription reaches no one: wait until every server has both
	// clients' subscriptions (the holder's Acquire made one too).
	channel := defaults.KeyPrefix + "released"
	await(t, "both clients' release subscriptions on every server", hangGuard, func() bool {
		for _, rc := range cl.Clients() {
			if n, err := rc.PubSubNumSub(ctx, channel).Result(); err != nil || n[channel] < 2 {
				return false
			}
		}
		return true
	})
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiter (not woken by the release?): %v", r.err)
	}
	if got := obs.get(observe.Acquired); got != 1 {
		t.Fatalf("waiter acquired %d times, want 1", got)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
