package rueidisnode_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/rueidisnode"
)

// The rueidis node passes the Node contract on a real redis-server.
func TestConformance(t *testing.T) {
	cl := redistest.StartT(t, 1)
	c := newRueidis(t, cl.Addrs()[0])
	redlocktest.RunNodeConformance(t, func(t *testing.T) redlock.Node { return rueidisnode.New(c) })
}

func TestName(t *testing.T) {
	cl := redistest.StartT(t, 1)
	c := newRueidis(t, cl.Addrs()[0])
	if got := rueidisnode.New(c).Name(); got != cl.Addrs()[0] {
		t.Fatalf("Name() = %q, want the address %q", got, cl.Addrs()[0])
	}
	if got := rueidisnode.New(c, rueidisnode.WithName("n1")).Name(); got != "n1" {
		t.Fatalf("Name() = %q, want n1", got)
	}
}

// The node runs redlock's scripts verbatim: a lock taken through the
// go-redis node is seen, extended and released through the rueidis node,
// and the other way round, and both find each other's scripts cached.
func TestSameScriptsAsRedisNode(t *testing.T) {
	cl := redistest.StartT(t, 1)
	ctx := ctxFor(t)
	gr := redlock.NewRedisNode(cl.Clients()[0])
	ru := rueidisnode.New(newRueidis(t, cl.Addrs()[0]))
	key := uniqueKey(t)
	a, err := gr.Acquire(ctx, key, "tok", time.Second)
	if err != nil || !a.Acquired {
		t.Fatalf("go-redis acquire = %+v, %v", a, err)
	}
	if h, err := ru.Inspect(ctx, key); err != nil || h.Token != "tok" || h.Fence != a.Fence {
		t.Fatalf("rueidis inspect = %+v, %v; want tok with fence %d", h, err, a.Fence)
	}
	if r, err := ru.Extend(ctx, key, "tok", 3*time.Second, a.Fence); err != nil || r != redlock.Extended {
		t.Fatalf("rueidis extend = %v, %v", r, err)
	}
	if ok, err := ru.Release(ctx, key, "tok"); err != nil || !ok {
		t.Fatalf("rueidis release = %v, %v", ok, err)
	}
	b, err := ru.Acquire(ctx, key, "tok2", time.Second)
	if err != nil || !b.Acquired || b.Fence != a.Fence+1 {
		t.Fatalf("rueidis acquire = %+v, %v; want fence %d", b, err, a.Fence+1)
	}
	if ok, err := gr.Release(ctx, key, "tok2"); err != nil || !ok {
		t.Fatalf("go-redis release = %v, %v", ok, err)
	}
	// The rueidis node used the SHA-1s that go-redis loaded: one script
	// text, one cache entry each.
	s := redlock.Scripts()
	var shas []string
	for _, src := range []string{s.Acquire, s.Extend, s.Release, s.Inspect} {
		sum := sha1.Sum([]byte(src))
		shas = append(shas, hex.EncodeToString(sum[:]))
	}
	exists, err := cl.Clients()[0].ScriptExists(ctx, shas...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range exists {
		if !ok {
			t.Fatalf("script %d (%s) not cached under the SHA-1 of its text", i, shas[i])
		}
	}
}

func TestExtendBatch(t *testing.T) {
	cl := redistest.StartT(t, 1)
	ctx := ctxFor(t)
	rc := newRueidis(t, cl.Addrs()[0])
	n := rueidisnode.New(rc)
	mine, other, missing := uniqueKey(t), uniqueKey(t), uniqueKey(t)
	if _, err := n.Acquire(ctx, mine, "a", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Acquire(ctx, other, "b", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ops := []redlock.ExtendOp{
		{Key: mine, Token: "a", TTL: 5 * time.Second},
		{Key: other, Token: "a", TTL: 5 * time.Second},
		{Key: missing, Token: "a", TTL: 5 * time.Second},
	}
	check := func(round string) {
		t.Helper()
		res, errs := n.ExtendBatch(ctx, ops)
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("%s: %v", round, err)
		}
		if want := []redlock.ExtendResult{redlock.Extended, redlock.NotHeld, redlock.NotHeld}; !equal(res, want) {
			t.Fatalf("%s: results %v, want %v", round, res, want)
		}
		if h, _ := n.Inspect(ctx, mine); h.TTL <= 4*time.Second {
			t.Fatalf("%s: own key's ttl %s not reset", round, h.TTL)
		}
		if h, _ := n.Inspect(ctx, other); h.Token != "b" || h.TTL > time.Second {
			t.Fatalf("%s: another's key changed: %+v", round, h)
		}
		if h, _ := n.Inspect(ctx, missing); h.Token != "" {
			t.Fatalf("%s: batch re-created a missing key: %+v", round, h)
		}
	}
	check("cached")
	// The server forgets its scripts (as after a restart): NOSCRIPT, then EVAL.
	if err := rc.Do(ctx, rc.B().ScriptFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	check("after SCRIPT FLUSH")
	if res, errs := n.ExtendBatch(ctx, nil); len(res) != 0 || len(errs) != 0 {
		t.Fatalf("empty batch = %v, %v", res, errs)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A Client over 5 rueidis nodes: acquire, extend, release.
func TestClientCycle(t *testing.T) {
	cl := redistest.StartT(t, 5)
	c := newClient(t, nodesOf(t, cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.Acquire(ctx, key, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence() == 0 || l.Remaining() <= 0 {
		t.Fatalf("lock fence %d remaining %s", l.Fence(), l.Remaining())
	}
	if _, err := c.TryAcquire(ctx, key, time.Second); err == nil {
		t.Fatal("a held key was acquired again")
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if l.Remaining() <= 3*time.Second {
		t.Fatalf("extended lock has %s left", l.Remaining())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("second release: %v, want ErrLockLost", err)
	}
	l2, err := c.TryAcquire(ctx, key, time.Second)
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
		cs = append(cs, newClient(t, nodesOf(t, cl), redlock.WithRetry(retry.Constant(1000, 5*time.Millisecond, 5*time.Millisecond))))
	}
	ctx := ctxFor(t)
	key := uniqueKey(t)
	counter := 0
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds)
	for g := range goroutines {
		c := cs[g%clients]
		wg.Go(func() {
			for range rounds {
				l, err := c.Acquire(ctx, key, 5*time.Second)
				if err != nil {
					errs <- err
					return
				}
				v := counter
				time.Sleep(time.Millisecond)
				counter = v + 1
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
	if counter != goroutines*rounds {
		t.Fatalf("counter = %d, want %d: two holders at once", counter, goroutines*rounds)
	}
}

// A node killed and restarted comes back empty, without its script cache:
// every script meets NOSCRIPT and runs by EVAL, and the Client keeps
// working (on the other nodes while it is down).
func TestNodeKilledAndRestarted(t *testing.T) {
	cl := redistest.StartT(t, 5)
	nodes := nodesOf(t, cl)
	c := newClient(t, nodes)
	ctx := ctxFor(t)
	cycle := func(what string) {
		t.Helper()
		l, err := c.Acquire(ctx, uniqueKey(t), 2*time.Second)
		if err != nil {
			t.Fatalf("%s: acquire: %v", what, err)
		}
		if err := l.Extend(ctx, 2*time.Second); err != nil {
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
	// The node alone, on each script: the first call of each meets NOSCRIPT.
	n := nodes[0]
	key := uniqueKey(t)
	await(t, "the restarted node to answer", 10*time.Second, func() bool {
		_, err := n.Inspect(ctx, key)
		return err == nil
	})
	a, err := n.(redlock.SeededAcquirer).AcquireSeeded(ctx, key, "tok", 2*time.Second, 1000)
	if err != nil || !a.Acquired || a.Fence != 1001 {
		t.Fatalf("acquire on the restarted node = %+v, %v; want acquired with fence 1001 (empty node, seed 1000)", a, err)
	}
	if r, err := n.Extend(ctx, key, "tok", 2*time.Second, 5); err != nil || r != redlock.Extended {
		t.Fatalf("extend = %v, %v", r, err)
	}
	if ok, err := n.RaiseFence(ctx, key, "tok", 7); err != nil || !ok {
		t.Fatalf("raise fence = %v, %v", ok, err)
	}
	if ok, err := n.Release(ctx, key, "tok"); err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	cycle("after the restart")
	// Every node is needed now: the restarted one must take part.
	if err := cl.Nodes()[1].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	cycle("two other nodes down")
}

// A waiter with a 2 s retry delay wakes on the holder's early release:
// it acquires well within a second of it.
func TestReleaseNotificationWakesWaiter(t *testing.T) {
	cl := redistest.StartT(t, 3)
	holder := newClient(t, nodesOf(t, cl))
	obs := &eventCounter{}
	waiter := newClient(t, nodesOf(t, cl), redlock.WithRetry(retry.Constant(5, 2*time.Second, 0)), redlock.WithObserver(obs))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	held, err := holder.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *redlock.Lock
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		l, err := waiter.Acquire(ctx, key, 10*time.Second)
		done <- result{l, err, time.Now()}
	}()
	await(t, "the waiter's first lost attempt", 10*time.Second, func() bool { return obs.get(redlock.EventContended) > 0 })
	time.Sleep(100 * time.Millisecond) // the subscriptions settle; the waiter sleeps on
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if d := r.at.Sub(released); d >= time.Second {
		t.Fatalf("waiter acquired %s after the release; want it woken by the release, not the 2s delay", d)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// The subscription reports up, delivers announcements with the release's
// id, reports down when its node dies and up again after the restart, and
// stop ends it.
func TestSubscriptionBreaksAndRecovers(t *testing.T) {
	cl := redistest.StartT(t, 1)
	n := rueidisnode.New(newRueidis(t, cl.Addrs()[0]))
	ctx := ctxFor(t)
	const channel = "test:released"
	type state struct {
		up  bool
		err error
	}
	states := make(chan state, 16)
	releases := make(chan [2]string, 16)
	stop, err := n.SubscribeReleases(context.Background(), channel,
		func(key, release string) { releases <- [2]string{key, release} },
		func(up bool, err error) { states <- state{up, err} })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	expect := func(up bool) {
		t.Helper()
		select {
		case s := <-states:
			if s.up != up {
				t.Fatalf("state up=%v (%v), want up=%v", s.up, s.err, up)
			}
			if !up && s.err == nil {
				t.Fatal("down without a cause")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no state change to up=%v", up)
		}
	}
	announce := func() {
		t.Helper()
		key := uniqueKey(t)
		if _, err := n.Acquire(ctx, key, "tok", time.Second); err != nil {
			t.Fatal(err)
		}
		if ok, err := n.ReleaseNotify(ctx, key, "tok", channel); err != nil || !ok {
			t.Fatalf("release notify = %v, %v", ok, err)
		}
		if ok, err := n.ReleaseNotify(ctx, key, "tok", channel); err != nil || ok {
			t.Fatalf("second release notify = %v, %v", ok, err) // announces nothing
		}
		select {
		case r := <-releases:
			if r[0] != key || len(r[1]) != 16 {
				t.Fatalf("announcement %q, want key %q with a 16-digit id", r, key)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no announcement")
		}
		select {
		case r := <-releases:
			t.Fatalf("second announcement %q", r)
		case <-time.After(50 * time.Millisecond):
		}
	}
	expect(true)
	announce()
	if err := cl.Nodes()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	expect(false)
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for { // down again for each failed resubscription, then up
		select {
		case s := <-states:
			if !s.up {
				continue
			}
		case <-time.After(10 * time.Second):
			t.Fatal("subscription not restored")
		}
		break
	}
	// The node's command connection broke too: wait for it to be remade.
	// rueidis meets its dead connections one call at a time before it has
	// redialled them all: wait for a run of answers, not the first one.
	await(t, "the restarted node to answer", 10*time.Second, func() bool {
		for range 20 {
			if _, err := n.Inspect(ctx, uniqueKey(t)); err != nil {
				return false
			}
		}
		return true
	})
	announce()
	stop()
	stop() // idempotent
}

// The node respects the context: a call against a paused server ends at
// its deadline.
func TestDeadlineOnPausedNode(t *testing.T) {
	cl := redistest.StartT(t, 1)
	n := rueidisnode.New(newRueidis(t, cl.Addrs()[0]))
	if _, err := n.Inspect(ctxFor(t), uniqueKey(t)); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[0].Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.Nodes()[0].Resume() }()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := n.Acquire(ctx, uniqueKey(t), "tok", time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire on a paused node: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("acquire returned after %s, want about 100ms", d)
	}
}
