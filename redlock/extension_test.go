package redlock_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

var errExtendFails = errors.New("extend fails on this node")

// failingExtend is a real node whose extensions fail at once.
type failingExtend struct{ *redisnode.Node }

func (failingExtend) Extend(context.Context, []node.ExtendArgs) ([]node.ExtendResult, error) {
	return nil, errExtendFails
}

// laterExtend is a real node whose extensions are sent a moment late, so
// that the failing nodes' answers come first.
type laterExtend struct{ *redisnode.Node }

func (n laterExtend) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.Node.Extend(ctx, ops)
}

// TestEvictedHolderLearnsDespiteFailingMinority: after ForceRelease, the
// evicted holder's next Extend returns ErrLockLost when a majority refuses
// its token, also when the other nodes fail, and fail first: two failures of
// five are not "too many nodes failed", and the loss is final at once.
func TestEvictedHolderLearnsDespiteFailingMinority(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	var nodes []node.Node
	for i, rc := range cl.Clients() {
		if i < 3 {
			nodes = append(nodes, laterExtend{redisnode.New(rc)})
		} else {
			nodes = append(nodes, failingExtend{redisnode.New(rc)})
		}
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := ctxFor(t)
	for range 3 {
		key := uniqueKey(t)
		l, err := c.TryAcquire(ctx, key, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ForceRelease(ctx, key, ""); err != nil {
			t.Fatal(err)
		}
		err = l.Extend(ctx, 20*time.Second)
		if !errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrQuorumUnreachable) {
			t.Fatalf("extend of the evicted holder: %v, want ErrLockLost (3 of 5 refuse its token)", err)
		}
		select {
		case <-l.Done():
		default:
			t.Fatal("Done is open after the extension found the lock lost")
		}
	}
}

// Auto-extension stops when Release returns: an extension that lands later
// would re-create the key (the extend script re-asserts missing keys). Many
// locks are extended continuously and released at random points of their
// rounds; afterwards no node holds any of them.
func TestNoExtensionAfterRelease(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, delayedBatchNode{n.(*redisnode.Node), 15 * time.Millisecond})
	}
	// A threshold just under the TTL: every lock is extended on every tick.
	// The node timeout and TTL leave room for a loaded machine.
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout), redlock.WithKeepAlive(extend.WithThreshold(4950*time.Millisecond)),
		redlock.WithKeepAlive(extend.WithSafetyMargin(100*time.Millisecond)), redlock.WithKeepAlive(extend.WithTick(5*time.Millisecond)))
	ctx := ctxFor(t)
	const n = 200
	locks := make([]*redlock.Lock, n)
	for i := range locks {
		l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l.KeepAlive()
		locks[i] = l
	}
	time.Sleep(300 * time.Millisecond) // rounds are now in flight all the time
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, l := range locks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			time.Sleep(time.Duration(i%37) * time.Millisecond)
			if err := l.Release(ctx); err != nil {
				t.Errorf("release: %v", err)
				return
			}
			// Release returns once a majority deleted (and a short linger
			// for the rest); a straggler's delete lands just after.
			if h := eventuallyFree(t, cl, c.KeyName(l.Key())); countEqual(h, "") != 3 {
				t.Errorf("after Release the nodes hold %v", h)
			}
			if l.Err() != redlock.ErrReleased {
				t.Errorf("Err after Release = %v", l.Err())
			}
		})
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // any straggling extension would have landed
	for _, l := range locks {
		if h := holders(t, cl, c.KeyName(l.Key())); countEqual(h, "") != 3 {
			t.Fatalf("an extension re-created %s after Release: %v", l.Key(), h)
		}
	}
	if k := c.KeptLocks(); k != 0 {
		t.Fatalf("%d locks still kept", k)
	}
}

// delayedBatchNode makes each batch slow, so that releases meet rounds in
// flight.
type delayedBatchNode struct {
	*redisnode.Node
	delay time.Duration
}

func (d delayedBatchNode) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	time.Sleep(d.delay)
	return d.Node.Extend(ctx, ops)
}

func TestExtendOptionsValidated(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]redlock.Option{
		"negative threshold": redlock.WithKeepAlive(extend.WithThreshold(-time.Second)),
		"negative margin":    redlock.WithKeepAlive(extend.WithSafetyMargin(-time.Second)),
		"negative tick":      redlock.WithKeepAlive(extend.WithTick(-time.Second)),
		"negative max hold":  redlock.WithKeepAlive(extend.WithMaxHold(-time.Second)),
	} {
		if _, err := redlock.New([]node.Node{memnode.New("a")}, opt); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	_, err := redlock.New([]node.Node{memnode.New("a")},
		redlock.WithKeepAlive(extend.WithThreshold(time.Second)), redlock.WithKeepAlive(extend.WithSafetyMargin(2*time.Second)))
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("margin above threshold: %v", err)
	}
	c := newClient(t, []node.Node{memnode.New("a")})
	if err := c.Do(ctxFor(t), "k", time.Second, nil); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("nil fn: %v", err)
	}
}

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
		// Each lock has its key (its record); the server has its
		// standing record.
		if size := node.Client().DBSize(context.Background()).Val(); size != int64(n)+1 {
			t.Errorf("node %d holds %d keys, want %d", i, size, n+1)
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

// Rule 6: extend moves the validity forward from the start of the call and
// resets the TTL on the nodes.
func TestRuleExtendMovesValidity(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := l.ValidUntil()
	time.Sleep(200 * time.Millisecond)
	began := time.Now()
	if err := l.Extend(ctx, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	validity := 6*time.Second - c.Drift(6*time.Second)
	if got := l.ValidUntil(); got.Before(began.Add(validity)) || got.After(ended.Add(validity)) || !got.After(before) {
		t.Fatalf("ValidUntil %v: want start of Extend + %s, within [%v, %v]", got, validity, began.Add(validity), ended.Add(validity))
	}
	// Extend returns at a majority; the last node's answer may still be on
	// its way.
	extended := 0
	for _, n := range cl.Nodes() {
		if ttl := holdLeft(ctx, n.Client(), c.KeyName(l.Key())); ttl >= 4*time.Second {
			extended++
		}
	}
	if extended < c.Quorum() {
		t.Fatalf("only %d nodes have the extended ttl", extended)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Rule 6: an expired lock is never silently re-acquired by Extend. The lock
// is extended only once its keys are gone from every node (waited for, not
// slept for), with node timeouts a loaded machine meets.
func TestRuleExtendAfterExpiryIsLost(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithNodeTimeout(time.Second))
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	name := c.KeyName(l.Key())
	for deadline := time.Now().Add(time.Minute); countEqual(holders(t, cl, name), "") != 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) { // hang guard
			t.Fatalf("keys of a 2s lock still there after a minute: %v", holders(t, cl, name))
		}
	}
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend after expiry: %v, want ErrLockLost", err)
	}
	if h := holders(t, cl, name); countEqual(h, "") != 3 {
		t.Fatalf("extend after expiry re-created keys: %v", h)
	}
	if l.Remaining() != 0 {
		t.Fatalf("lost lock reports %s remaining", l.Remaining())
	}
}

// Rule 6: a node that restarted empty gets the key back by Extend; the fence
// counter there is raised so it cannot hand out an older fence.
func TestRuleExtendReassertsRestartedNode(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(l.Key()), l.Token())
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	name := c.KeyName(l.Key())
	_ = c.Close() // Extend returned at a majority; Close waits for the third answer
	if h := holders(t, cl, name); countEqual(h, l.Token()) != 3 {
		t.Fatalf("after extend nodes hold %v, want our token on all 3", h)
	}
	fence := countOf(ctx, cl.Nodes()[0].Client(), name)
	if fence < l.Fence() {
		t.Fatalf("restarted node's fence counter %d below the lock's fence %d", fence, l.Fence())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Rule 6: when a majority lost the key, Extend reports the loss and takes
// back the keys it re-asserted.
func TestRuleExtendLostOnMajorityRestart(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(l.Key()), l.Token())
	for _, i := range []int{0, 1} {
		if err := cl.Nodes()[i].Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend with 2 of 3 nodes restarted: %v, want ErrLockLost", err)
	}
	_ = c.Close() // the lost lock's keys are deleted in the background
	if h := holders(t, cl, c.KeyName(l.Key())); countEqual(h, "") != 3 {
		t.Fatalf("lost extend left keys: %v", h)
	}
}
