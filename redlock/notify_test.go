package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// eventCounter counts the observer's events by kind.
type eventCounter struct {
	mu     sync.Mutex
	counts map[observe.Kind]int
}

func (e *eventCounter) Observe(ev observe.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[observe.Kind]int{}
	}
	e.counts[ev.Kind]++
}

func (e *eventCounter) get(k observe.Kind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[k]
}

// logRecorder is a slog.Handler that keeps the messages it is given.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// count is how many records at level have a message containing msg.
func (r *logRecorder) count(level slog.Level, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.Level == level && strings.Contains(rec.Message, msg) {
			n++
		}
	}
	return n
}

type acquireResult struct {
	lock *redlock.Lock
	err  error
	at   time.Time
}

// blockedWaiterCtx starts Acquire of key on c under ctx in the
// background, and returns once it lost its first attempt.
func blockedWaiterCtx(t *testing.T, ctx context.Context, c *redlock.Client, obs *eventCounter, key string, ttl time.Duration) <-chan acquireResult {
	t.Helper()
	before := obs.get(observe.Contended)
	done := make(chan acquireResult, 1)
	go func() {
		l, err := c.Acquire(ctx, key, ttl)
		done <- acquireResult{l, err, time.Now()}
	}()
	await(t, "the waiter's first lost attempt", 2*time.Minute, func() bool { return obs.get(observe.Contended) > before })
	return done
}

// handoff holds key with holder, starts a waiter on waiter, releases after
// a moment, and returns how long after the release the waiter acquired.
// The holder's TTL is 10 minutes: a waiter whose retry delay is as long
// gets the lock within the test's context (a minute) only if the release
// woke it, however slow the machine (wokenDelay).
//
// With settle, the holder's key is first awaited on every node of it: a
// waiter hears a release only from the nodes it is subscribed to, and only
// where the release deleted the key (a node that missed the acquire
// announces nothing).
func handoff(t *testing.T, holder, waiter *redlock.Client, obs *eventCounter, settle ...*redistest.Cluster) time.Duration {
	t.Helper()
	ctx := ctxFor(t)
	key := uniqueKey(t)
	held := holdEverywhere(t, holder, key, settle...)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := blockedWaiterCtx(t, wctx, waiter, obs, key, 10*time.Minute)
	time.Sleep(100 * time.Millisecond) // let the subscriptions settle; the waiter sleeps on
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if err := r.lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return r.at.Sub(released)
}

// holdEverywhere acquires key with holder, with settle until its key is on
// every node of the cluster.
func holdEverywhere(t *testing.T, holder *redlock.Client, key string, settle ...*redistest.Cluster) *redlock.Lock {
	t.Helper()
	ctx := ctxFor(t)
	for try := 0; ; try++ {
		held, err := holder.Acquire(ctx, key, 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(settle) == 0 || holdsEverywhere(settle[0], holder.KeyName(key), held.Token()) {
			return held
		}
		if try == 10 {
			t.Fatalf("the holder's key never reached every node in 10 acquisitions: %v", holders(t, settle[0], holder.KeyName(key)))
		}
		_ = held.Release(ctx) // a node missed the acquire (a loaded machine): again
	}
}

// wokenDelay is a retry delay (and the holder's TTL in handoff) far longer
// than a test's context: a waiter gets the lock in time only if woken.
const wokenDelay = 10 * time.Minute

// Rule 5: a waiter wakes on the holder's release, not after the retry
// policy's delay or the holder's TTL (10 minutes each).
func TestNotifyWakesOnRelease(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	obs := &eventCounter{}
	holder := newClient(t, nodesOf(cl))
	waiter := newClient(t, nodesOf(cl), redlock.WithRetry(retry.Constant(5, wokenDelay, 0)), redlock.WithObserver(obs))
	t.Logf("woken %s after the release", handoff(t, holder, waiter, obs))
}

// The same handoff without notifications takes the policy's delay: the
// test above could fail.
func TestNotifyOffWaitsPolicyDelay(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	obs := &eventCounter{}
	holder := newClient(t, nodesOf(cl), redlock.WithReleaseNotifications(false))
	waiter := newClient(t, nodesOf(cl), redlock.WithRetry(retry.Constant(5, 2*time.Second, 0)),
		redlock.WithObserver(obs), redlock.WithReleaseNotifications(false))
	if d := handoff(t, holder, waiter, obs); d < 1500*time.Millisecond {
		t.Fatalf("waiter acquired %s after the release with notifications off; want the policy's 2s delay", d)
	}
}

// A holder whose client has notifications off announces nothing: a waiter
// with them on still gets the lock, by the policy's delay (mixed
// deployments keep working).
func TestNotifyMixedClients(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	obs := &eventCounter{}
	holder := newClient(t, nodesOf(cl), redlock.WithReleaseNotifications(false))
	waiter := newClient(t, nodesOf(cl), redlock.WithRetry(retry.Constant(5, 500*time.Millisecond, 0)), redlock.WithObserver(obs))
	if d := handoff(t, holder, waiter, obs); d < 200*time.Millisecond {
		t.Fatalf("waiter acquired %s after an unannounced release: woken by what?", d)
	}
}

// Waiters of one client for one key are woken one at a time: 16 of them
// all get the lock in turn, never two at once, with few lost attempts. If
// every release woke every waiter, the k-th handoff alone would cost k-1
// lost attempts: 120 in all, plus the 16 first ones.
func TestNotifyNoStampede(t *testing.T) {
	t.Parallel()
	const waiters = 16
	cl := redistest.StartT(t, 3)
	obs := &eventCounter{}
	c := newClient(t, nodesOf(cl), redlock.WithObserver(obs),
		redlock.WithRetry(retry.Constant(100, 3*time.Second, 300*time.Millisecond)))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	first, err := c.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	var (
		inside, overlaps atomic.Int32
		wg               sync.WaitGroup
		errs             = make(chan error, waiters)
	)
	for range waiters {
		wg.Go(func() {
			l, err := c.Acquire(ctx, key, 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			if inside.Add(1) != 1 {
				overlaps.Add(1)
			}
			time.Sleep(10 * time.Millisecond)
			inside.Add(-1)
			if err := l.Release(ctx); err != nil {
				errs <- err
			}
		})
	}
	await(t, "every waiter's first lost attempt", 20*time.Second, func() bool { return obs.get(observe.Contended) >= waiters })
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d overlapping critical sections", n)
	}
	if got := obs.get(observe.Acquired); got != waiters+1 {
		t.Fatalf("%d acquisitions, want %d", got, waiters+1)
	}
	lost := obs.get(observe.Contended)
	t.Logf("%d waiters: %d lost attempts in all (%d before the first release), handoffs took %s",
		waiters, lost, waiters, time.Since(began))
	// Each waiter loses its first attempt; the rest come from the nodes'
	// duplicate announcements racing a release that has not reached every
	// node yet, and from slow machines where a 3 s timer fires anyway.
	if bound := 3 * waiters; lost > bound {
		t.Fatalf("%d lost attempts, want at most %d: the waiters stampede", lost, bound)
	}
}

// scripterOnly hides everything but redis.Scripter: a node over it can
// announce releases but cannot subscribe.
type scripterOnly struct{ redis.Scripter }

// When the subscriptions break (the only subscribing node is killed),
// waiting falls back to the policy's delays and says so once; after the
// node comes back, releases wake waiters again.
func TestNotifySubscriptionBreaksAndRecovers(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	rcs := cl.Clients()
	nodes := []node.Node{
		redisnode.New(rcs[0]), // the only node whose client can subscribe
		redisnode.NewNamed("scripter-1", scripterOnly{rcs[1]}),
		redisnode.NewNamed("scripter-2", scripterOnly{rcs[2]}),
	}
	logs := &logRecorder{}
	obs := &eventCounter{}
	holder := newClient(t, nodes)
	waiter := newClient(t, nodes, redlock.WithObserver(obs), redlock.WithLogger(slog.New(logs)),
		redlock.WithRetry(retry.Constant(20, wokenDelay, 0)))
	// The same client's waiting, but with a delay that ends while the
	// subscription is broken.
	patient := newClient(t, nodes, redlock.WithObserver(obs), redlock.WithLogger(slog.New(logs)),
		redlock.WithRetry(retry.Constant(20, 1500*time.Millisecond, 0)))

	// Healthy: woken by the release (node 0, the only one it hears, must
	// have had the key).
	handoff(t, holder, waiter, obs, cl)
	handoff(t, holder, patient, obs, cl) // its subscription is up too

	if err := cl.Nodes()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	const broken = "release notifications broken"
	await(t, "the broken subscriptions' warnings", 2*time.Minute, func() bool { return logs.count(slog.LevelWarn, broken) >= 2 })
	// Broken: the policy's delay (the two live nodes are a quorum).
	if d := handoff(t, holder, patient, obs); d < 500*time.Millisecond {
		t.Fatalf("while broken: acquired %s after the release, want the 1.5s delay (woken by what?)", d)
	}
	if n := logs.count(slog.LevelWarn, broken); n != 2 {
		t.Fatalf("%d warnings about the broken subscriptions, want 2 (once per break and client)", n)
	}

	if err := cl.Nodes()[0].Restart(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	await(t, "the subscription to be restored", 2*time.Minute, func() bool {
		return logs.count(slog.LevelInfo, "release notifications restored") >= 2
	})
	handoff(t, holder, waiter, obs, cl) // woken again
}

// Close stops every goroutine the subscriptions started, is idempotent, and
// leaves the client usable (waiting by delays).
func TestNotifyCloseStopsGoroutines(t *testing.T) {
	cl := redistest.StartT(t, 3)
	obs := &eventCounter{}
	holder := newClient(t, nodesOf(cl))
	waiter := newClient(t, nodesOf(cl), redlock.WithObserver(obs), redlock.WithRetry(retry.Constant(5, 300*time.Millisecond, 0)))
	// Warm the go-redis pools so their state is part of the baseline, and
	// the holder's subscriptions (every Acquire joins the waiters before its
	// first attempt, so that no release can slip by).
	if l, err := holder.Acquire(ctxFor(t), uniqueKey(t), time.Second); err == nil {
		_ = l.Release(ctxFor(t))
	}
	if l, err := waiter.TryAcquire(ctxFor(t), uniqueKey(t), time.Second); err == nil {
		_ = l.Release(ctxFor(t))
	}
	baseline := goleak.IgnoreCurrent()

	handoff(t, holder, waiter, obs) // starts the subscriptions
	if err := goleak.Find(baseline); err == nil {
		t.Fatal("no subscription goroutines while waiting? the test would prove nothing")
	}
	if err := waiter.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waiter.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	goleak.VerifyNone(t, baseline)

	// Still usable, without starting anything.
	handoff(t, holder, waiter, obs)
	goleak.VerifyNone(t, baseline)
}

// Memory nodes announce releases in process, with the same waking.
func TestNotifyMemoryNodes(t *testing.T) {
	t.Parallel()
	nodes := []node.Node{votingMem("m0"), votingMem("m1"), votingMem("m2")}
	obs := &eventCounter{}
	holder := newClient(t, nodes)
	waiter := newClient(t, nodes, redlock.WithObserver(obs), redlock.WithRetry(retry.Constant(5, wokenDelay, 0)))
	handoff(t, holder, waiter, obs)
}

// Waiters of one client are woken in arrival order, one per release, and a
// waiter that gives up while queued (its context ends) does not hold up the
// ones behind it. Memory nodes in a synctest bubble: time is virtual, so the
// policy's 10 s delay would show. (The hub's own rules, such as passing on
// the wake of a woken waiter that gives up, are in internal/wake.)
func TestNotifyFIFOAndPassOn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		nodes := []node.Node{votingMem("m0"), votingMem("m1"), votingMem("m2")}
		c, err := redlock.New(nodes, redlock.WithRetry(retry.Constant(10, 10*time.Second, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		held, err := c.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		quitter, quit := context.WithCancel(ctx)
		defer quit()
		for i := range 4 {
			wctx := ctx
			if i == 1 {
				wctx = quitter // gives up in the queue: its turn goes to 2
			}
			wg.Go(func() {
				l, err := c.Acquire(wctx, "k", time.Minute)
				if err != nil {
					if i != 1 || !errors.Is(err, context.Canceled) {
						t.Errorf("waiter %d: %v", i, err)
					}
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if i == 0 {
					quit() // waiter 1 is next: make it leave instead
				}
				time.Sleep(time.Second)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			})
			synctest.Wait() // waiter i lost its first attempt and waits
			time.Sleep(time.Millisecond)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if want := []int{0, 2, 3}; !slices.Equal(order, want) {
			t.Fatalf("acquired in order %v, want %v", order, want)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("handoffs took %s of virtual time: someone slept the 10s delay", d)
		}
	})
}

// holdsEverywhere reports whether every node of c holds token under name
// within a few seconds.
func holdsEverywhere(c *redistest.Cluster, name, token string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		for _, nd := range c.Nodes() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			v, _ := nd.Client().Get(ctx, name).Result()
			cancel()
			if wire.ParseLockValue(v).Token == token {
				n++
			}
		}
		if n == len(c.Nodes()) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// attemptGuard counts a client's attempts and cancels its context past max,
// so that a retry loop that never sleeps ends the test instead of hanging it.
type attemptGuard struct {
	n      atomic.Int32
	max    int32
	cancel context.CancelFunc
}

func (g *attemptGuard) Observe(ev observe.Event) {
	if ev.Kind == observe.Attempt && g.n.Add(1) > g.max {
		g.cancel()
	}
}

// The undo of a failed attempt announces a release too. Two waiters of
// different clients must not be woken by each other's undo while the holder
// keeps the lock: each lost attempt frees the nodes it won, the other
// client's waiter would try again at once, lose, free them... a loop of
// attempts with no sleep (found by the simulator: seed 3318 stormed with
// 25,000 requests in flight). The holder holds 3 of 5 memory nodes, so
// every lost attempt wins the other 2 and undoes them. On synctest's clock
// the loop would take no time at all: the guard cancels it and the test
// fails with the count.
func TestNotifyUndoDoesNotWakeWaiters(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var nodes []node.Node
		var mems []*memnode.Node
		for i := range 5 {
			m := votingMem("m" + string(rune('0'+i)))
			mems = append(mems, m)
			nodes = append(nodes, m)
		}
		const hold, delay = 5 * time.Second, time.Second
		holder, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		mems[3].SetDown(true, false)
		mems[4].SetDown(true, false)
		held, err := holder.Acquire(context.Background(), "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		mems[3].SetDown(false, false)
		mems[4].SetDown(false, false)

		// Each waiter may try once at the start, once per delay and once
		// after the release, plus a few for the subscriptions coming up and
		// the other's acquisition: far below the guard.
		const bound = int32(hold/delay) + 5
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		guards := make([]*attemptGuard, 2)
		for i := range guards {
			g := &attemptGuard{max: 100, cancel: cancel}
			guards[i] = g
			c, err := redlock.New(nodes, redlock.WithObserver(g), redlock.WithRetry(retry.Constant(100, delay, 0)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			wg.Go(func() {
				l, err := c.Acquire(ctx, "k", time.Minute)
				if err != nil {
					t.Errorf("waiter %d: %v after %d attempts", i, err, g.n.Load())
					return
				}
				time.Sleep(10 * time.Millisecond)
				if err := l.Release(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		time.Sleep(hold)
		if err := held.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, g := range guards {
			if n := g.n.Load(); n > bound {
				t.Errorf("waiter %d made %d attempts while the lock was held %s with a %s retry delay, want at most %d: woken by the other's undo", i, n, hold, delay, bound)
			}
		}
	})
}

// lateNode cannot subscribe and applies releases late: the release of a
// holder reaches the announcing node first.
type lateNode struct {
	Node
	delay time.Duration
}

func (n lateNode) Subscribe(context.Context, string, func(string, string), func(bool, error)) (func(), error) {
	return nil, node.ErrNotificationsUnsupported
}

func (n lateNode) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	time.Sleep(n.delay)
	return n.Node.Release(ctx, a)
}

// A waiter woken by the only node that announces releases tries before the
// holder's release has reached the other nodes, and loses to the same
// holder: no other announcement will come, and the holder's TTL and the
// retry delay are ten minutes. It looks again a few round trips later and
// gets the lock (memory nodes in a synctest bubble; before, it slept the
// ten minutes).
func TestNotifyWokenAheadOfTheRelease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		nodes := []node.Node{votingMem("m0"),
			lateNode{votingMem("m1"), 2 * time.Millisecond}, lateNode{votingMem("m2"), 2 * time.Millisecond}}
		holder, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		waiter, err := redlock.New(nodes, redlock.WithRetry(retry.Constant(5, wokenDelay, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer waiter.Close()
		ctx := context.Background()
		held, err := holder.Acquire(ctx, "k", wokenDelay)
		if err != nil {
			t.Fatal(err)
		}
		// Acquire returns at a majority: let the third node's acquire land,
		// so that the waiter meets the holder on every node. (If the waiter
		// got a node first, its next attempt could meet a split vote, whose
		// rounds a zero round trip uses up before the release lands.)
		synctest.Wait()
		done := make(chan error, 1)
		go func() {
			l, err := waiter.Acquire(ctx, "k", time.Minute)
			if err == nil {
				err = l.Release(ctx)
			}
			done <- err
		}()
		synctest.Wait() // the waiter lost its first attempt and sleeps
		released := time.Now()
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(released); d > time.Second {
			t.Fatalf("the waiter got the lock %s after the release: it slept through it", d)
		}
	})
}

// TestWaitersPollOverNodesWithoutSubscriber: over nodes that cannot
// subscribe, no call fails for it: Released gives a channel (that never
// fires), and a waiting Acquire gets the lock after the holder's release
// by the retry policy's delays.
func TestWaitersPollOverNodesWithoutSubscriber(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, bareNode{n})
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithRetry(retry.Constant(1000, 20*time.Millisecond, 0)))
	ctx := ctxFor(t)
	key := uniqueKey(t)

	if _, err := c.Released(ctx, key); err != nil {
		t.Fatalf("Released over nodes without Subscriber: %v, want a channel", err)
	}
	holder, err := c.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := c.Acquire(ctx, key, 30*time.Second)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter over nodes without Subscriber: %v, want the lock after the release", err)
	}
}

// A release that lands while a waiter's attempt is in flight
// (after a node said "held", before the waiter parks) wakes the waiter: it
// does not sleep its retry delay (v1: 2.0 s instead of 51 ms). The
// subscriptions are warm, as in a busy service.
func TestReleaseDuringAttemptIsNotMissed(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	holder := newClient(t, nodesOf(cl))
	const delay = 30 * time.Second
	key := uniqueKey(t)
	p := &pauser{name: holder.KeyName(key), seen: make(chan struct{}, 3), gate: make(chan struct{})}
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, pausingNode{Node: n.(Node), p: p})
	}
	var contended atomic.Int32
	// The gate holds the attempt's replies until the release is announced:
	// a node timeout of 10 s keeps a loaded machine from turning them into
	// failures (an attempt whose nodes all failed names no holder, and then
	// no release wakes the waiter).
	waiter := newClient(t, nodes, redlock.WithRetry(retry.Constant(3, delay, 0)), redlock.WithNodeTimeout(10*time.Second),
		redlock.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Contended {
				contended.Add(1)
			}
		})))

	// Warm the waiter's subscriptions with a wait on another key. The holder
	// only tries (it never subscribes), so that a subscriber on every node
	// is the waiter: a release is announced only by the nodes where the
	// waiter's attempt marked the key, and it must hear each of them.
	other, err := holder.TryAcquire(ctx, uniqueKey(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	warm := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, other.Key(), time.Minute)
		if err == nil {
			err = l.Release(ctx)
		}
		warm <- err
	}()
	await(t, "the warming waiter's first lost attempt", time.Minute, func() bool { return contended.Load() > 0 })
	await(t, "the waiter's subscription on every node", time.Minute, func() bool {
		for _, rc := range cl.Clients() {
			if n := rc.PubSubNumSub(ctx, holder.ReleaseChannel()).Val()[holder.ReleaseChannel()]; n < 1 {
				return false
			}
		}
		return true
	})

	l, err := holder.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		wl, err := waiter.Acquire(ctx, key, time.Minute)
		if err == nil {
			err = wl.Release(ctx)
		}
		got <- err
	}()
	<-p.seen // the waiter's attempt met the holder on a node
	announced := listen(t, cl, holder.ReleaseChannel())
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-announced
	released := time.Now()
	close(p.gate) // now the attempt comes back "held"
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("acquired %s after the release", time.Since(released))
	case <-time.After(delay / 2):
		t.Fatalf("the waiter slept through a release that landed during its attempt")
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-warm; err != nil {
		t.Fatal(err)
	}
}

// pausingNode holds back the "held" answers to acquires of p.name until
// p.gate is closed, and says so on p.seen.
type pausingNode struct {
	Node
	p *pauser
}

type pauser struct {
	name string
	seen chan struct{}
	gate chan struct{}
}

func (n pausingNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := n.Node.Acquire(ctx, a)
	if err == nil && !r.Acquired && a.Name == n.p.name {
		select {
		case n.p.seen <- struct{}{}:
		default:
		}
		<-n.p.gate
	}
	return r, err
}

// listen subscribes to channel on node 0 and returns a channel that gets
// the first message.
func listen(t *testing.T, cl *redistest.Cluster, channel string) <-chan struct{} {
	t.Helper()
	ps := cl.Clients()[0].Subscribe(ctxFor(t), channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctxFor(t)); err != nil { // the confirmation
		t.Fatal(err)
	}
	out := make(chan struct{})
	go func() {
		if _, err := ps.ReceiveMessage(ctxFor(t)); err == nil {
			close(out)
		}
	}()
	return out
}

// Across clients, the waiter that has lost more attempts to the holder
// tries first after a release: woken together, the senior waiter of client
// A, whose nodes are 2 ms away, beats the newer waiter of client B, whose
// nodes are 1 ms away and whose attempt would otherwise land first. Memory
// nodes in a synctest bubble: the delays are exact.
func TestSeniorWaiterTriesFirstAcrossClients(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		mems := []*memnode.Node{votingMem("m0"), votingMem("m1"), votingMem("m2")}
		clientAt := func(delay time.Duration) *redlock.Client {
			var nodes []node.Node
			for _, m := range mems {
				if delay == 0 {
					nodes = append(nodes, m)
				} else {
					nodes = append(nodes, farNode{Node: m, delay: delay})
				}
			}
			c, err := redlock.New(nodes, redlock.WithRetry(retry.Constant(10, 10*time.Second, 0)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		holder, a, b := clientAt(0), clientAt(2*time.Millisecond), clientAt(time.Millisecond)
		ctx := context.Background()
		held, err := holder.Acquire(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		waiter := func(name string, c *redlock.Client) {
			wg.Go(func() {
				l, err := c.Acquire(ctx, "k", time.Minute)
				if err != nil {
					t.Errorf("waiter %s: %v", name, err)
					return
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(time.Second)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			})
			time.Sleep(10 * time.Millisecond) // its first attempt lands, and loses
			synctest.Wait()                   // it waits
		}
		waiter("A", a)
		// A loses twice more: the holder takes the key back at once after
		// each release, before A's attempt lands.
		for range 2 {
			if err := held.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if held, err = holder.Acquire(ctx, "k", time.Minute); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // A's attempt lost, and it waits again
		}
		waiter("B", b)
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if want := []string{"A", "B"}; !slices.Equal(order, want) {
			t.Fatalf("acquired in order %v, want %v: the senior waiter should try first", order, want)
		}
	})
}
