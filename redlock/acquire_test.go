package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// contend makes waiting attempts on key that must all lose: blocking
// Acquires that retry (and so wait for a release), and attempts of a
// client with a Released watcher on the key.
func contend(t *testing.T, c *redlock.Client, key string) {
	t.Helper()
	ctx := ctxFor(t)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := c.Released(wctx, key); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Acquire(ctx, key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("acquire of a held key: %v, want ErrNotAcquired", err)
		}
		if _, err := c.TryAcquire(ctx, key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("try-acquire of a held key: %v, want ErrNotAcquired", err)
		}
	}
}

// Contended attempts change nothing of the holding they find but one mark:
// a value that is not a lock of ours stays as it is, byte for byte; the
// holder's record differs only by the "!" a waiting attempt put before its
// token (the same holder, fence, end and owner), and the holder's release
// is announced to a watcher of the key.
func TestContendedAttemptsOnlyMarkTheHolding(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout),
		redlock.WithRetry(retry.Constant(3, 20*time.Millisecond, 0))}
	holder := newClient(t, nodesOf(cl), opts...)
	waiter := newClient(t, nodesOf(cl), opts...)

	t.Run("foreign value", func(t *testing.T) {
		key := uniqueKey(t)
		name := waiter.KeyName(key)
		for _, n := range cl.Nodes() {
			if err := n.Client().Set(context.Background(), name, "other", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		contend(t, waiter, key)
		for i, v := range rawValues(t, cl, name) {
			if v != "other" {
				t.Errorf("node %d: foreign value %q became %q", i, "other", v)
			}
		}
	})

	t.Run("holder's value", func(t *testing.T) {
		ctx := ctxFor(t)
		key := uniqueKey(t)
		name := waiter.KeyName(key)
		l, err := holder.TryAcquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		settled(t, cl, name, l.Token()) // the slowest node's grant has landed
		before := rawValues(t, cl, name)
		contend(t, waiter, key)
		after := rawValues(t, cl, name)
		for i := range before {
			if mark := strings.Replace(before[i], " "+l.Token()+" ", " !"+l.Token()+" ", 1); after[i] != mark {
				t.Errorf("node %d: the holder's value %q became %q, want %q", i, before[i], after[i], mark)
			}
		}
		released, err := waiter.Released(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-released:
		case <-time.After(10 * time.Second): // a hang guard: the announcement comes in milliseconds
			t.Fatal("the holder's release was not announced to a watcher")
		}
	})
}

// A node restarted empty has lost its script cache: the client's EVALSHA
// gets NOSCRIPT and falls back to EVAL, on the same go-redis client.
func TestNoscriptAfterRestart(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	cycle := func() {
		t.Helper()
		key := uniqueKey(t)
		l, err := c.TryAcquire(ctx, key, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes() {
		if err := n.Client().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Acquire on all three must work, node 0 included.
	key := uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for countEqual(holders(t, cl, c.KeyName(key)), l.Token()) != 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if h := holders(t, cl, c.KeyName(key)); h[0] != l.Token() {
		t.Fatalf("restarted node did not take the lock: %v", h)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cycle()
}

// Mutual exclusion end to end: 3 clients x 8 goroutines on 5 nodes run 2,000
// critical sections that read a shared counter, sleep, and write it back. A
// lost update or an overlap means two holders at once. The verdict counts
// sections, not time: the context is only a hang guard, and a run that hits
// it says how far it got. Node timeouts and the TTL are generous, so that a
// holder delayed by a loaded machine does not outlive its lock.
//
// REDLOCK_TEST_BROKEN_QUORUM=1 gives each client its own 2 of the 5 nodes (a
// "quorum" of a minority), to show that the test catches a broken lock.
func TestMutualExclusionUnderContention(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	const clients, perClient, sections = 3, 8, 2000
	var cs []*redlock.Client
	for i := range clients {
		cs = append(cs, newClient(t, contentionNodes(cl, i), redlock.WithNodeTimeout(5*time.Second),
			redlock.WithRetry(retry.Constant(1_000_000, time.Millisecond, time.Millisecond))))
	}
	var (
		counter  int // deliberately unsynchronized: only the lock protects it
		inside   atomic.Int32
		overlaps atomic.Int32
		claimed  atomic.Int32
		done     atomic.Int32 // sections completed
		fences   []uint64
	)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	key := uniqueKey(t)
	var wg sync.WaitGroup
	for i := range clients * perClient {
		c := cs[i%clients]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for claimed.Add(1) <= sections {
				l, err := c.Acquire(ctx, key, 30*time.Second)
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				v := counter
				time.Sleep(50 * time.Microsecond)
				counter = v + 1
				fences = append(fences, l.Fence())
				done.Add(1)
				inside.Add(-1)
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	n := int(done.Load())
	if overlaps.Load() != 0 || counter != n {
		t.Fatalf("mutual exclusion broken: %d overlapping critical sections; counter = %d after %d completed sections: %d lost updates",
			overlaps.Load(), counter, n, n-counter)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fence %d after %d at section %d", fences[i], fences[i-1], i)
		}
	}
	if n < sections {
		t.Fatalf("ran out of time (hang guard %s) after %d of %d sections; no overlap, no lost update, fences increasing", hangGuard, n, sections)
	}
}

// contentionNodes is the nodes client i of TestMutualExclusionUnderContention
// uses: all of them, or with REDLOCK_TEST_BROKEN_QUORUM=1 two of its own, so
// that the clients' "majorities" do not intersect.
func contentionNodes(cl *redistest.Cluster, i int) []node.Node {
	nodes := nodesOf(cl)
	if os.Getenv("REDLOCK_TEST_BROKEN_QUORUM") != "1" {
		return nodes
	}
	return []node.Node{nodes[(2*i)%len(nodes)], nodes[(2*i+1)%len(nodes)]}
}

// A holder whose client closed without releasing lets the lock expire; the
// next worker takes over and learns from whom.
func TestTakeoverAfterClosedClient(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	crashed, err := redlock.New(nodesOf(cl), redlock.WithOwner("worker-1"), redlock.WithNodeTimeout(testNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	old, err := crashed.TryAcquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = crashed.Close() // no release
	// The old key must expire on every node before the rescuer takes over:
	// a node where it outlived the takeover keeps worker-1's trail, and the
	// acquisition after the release below would report it again (TookOver's
	// documented limit).
	eventuallyFree(t, cl, crashed.KeyName(key))
	rescuer := newClient(t, nodesOf(cl), redlock.WithOwner("worker-2"), patient)
	l, err := rescuer.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	prev, ok := l.TookOver()
	if !ok || prev.Owner != "worker-1" || !tookOverFence(prev.Fence, old.Fence(), l.Fence()) || prev.Holder != node.ReleaseID(old.Token()) ||
		!prev.AcquiredAt.Equal(old.AcquiredAt()) || prev.Key != key {
		t.Fatalf("TookOver = %+v, %v; want worker-1's lock, fence %d", prev, ok, old.Fence())
	}
	// Acquire returns at a majority: let the last node's acquisition land
	// (replacing worker-1's trail there) before the release.
	settled(t, cl, crashed.KeyName(key), l.Token())
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = rescuer.Close() // Release returns at a majority: let every node's release land
	// Released: the next one takes over from nobody.
	l, err = rescuer.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if prev, ok := l.TookOver(); ok {
		t.Fatalf("after a release, TookOver = %+v", prev)
	}
}

func TestNoTakeoverAfterRelease(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	for i := range 3 {
		l, err := c.TryAcquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := l.TookOver(); ok {
			t.Fatalf("acquisition %d after releases reports a takeover: %+v", i, prev)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c.Close() // Release returns at a majority: let every node's release land
	}
}

// holderEnv makes the test binary a lock holder that prints its fence and
// waits to be killed (TestHelperHolder).
const holderEnv = "QUORUMLOCK_TEST_HOLDER"

// A worker process holding a lock is killed (SIGKILL: no release, no
// cleanup); a second worker takes the lock over once it expires, with the
// killed worker's owner and fence.
func TestTakeoverAfterKilledHolder(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperHolder$")
	cmd.Env = append(os.Environ(), holderEnv+"="+strings.Join(cl.Addrs(), ",")+"|"+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var fence uint64
	var owner string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "HOLDING "); ok {
			fs, o, _ := strings.Cut(f, " ")
			fence, _ = strconv.ParseUint(fs, 10, 64)
			owner = o
			break
		}
	}
	if fence == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the holder process never reported its lock")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	rescuer := newClient(t, nodesOf(cl), redlock.WithOwner("rescuer"), patient)
	l, err := rescuer.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	prev, ok := l.TookOver()
	if !ok || prev.Owner != owner || !tookOverFence(prev.Fence, fence, l.Fence()) {
		t.Fatalf("TookOver = %+v, %v; want the killed holder %q with fence in [%d, %d)", prev, ok, owner, fence, l.Fence())
	}
	if !strings.Contains(owner, "/"+strconv.Itoa(cmd.Process.Pid)+"/") {
		t.Fatalf("the killed holder's default owner %q lacks its pid %d", owner, cmd.Process.Pid)
	}
	if l.Fence() <= fence {
		t.Fatalf("fence %d not above the killed holder's %d", l.Fence(), fence)
	}
}

// TestHelperHolder is the lock holder process of TestTakeoverAfterKilledHolder.
func TestHelperHolder(t *testing.T) {
	spec := os.Getenv(holderEnv)
	if spec == "" {
		t.Skip("only as the holder process of TestTakeoverAfterKilledHolder")
	}
	addrs, key, _ := strings.Cut(spec, "|")
	var nodes []node.Node
	for _, a := range strings.Split(addrs, ",") {
		nodes = append(nodes, redisnode.New(redisClient(a)))
	}
	c, err := redlock.New(nodes) // the default owner: host/pid/program
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.TryAcquire(context.Background(), key, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("HOLDING %d %s\n", l.Fence(), l.Owner())
	time.Sleep(time.Hour) // until killed
}

// Rule 3: an acquisition whose answers came too late for any validity to be
// left is refused, and leaves nothing behind. The nodes answer after the
// validity (ttl - drift) but inside the client's patience for late answers
// (node timeout + a 50 ms grace): a window only virtual time hits every time,
// so memory nodes in a synctest bubble, whatever the machine's load.
func TestRuleNoValidityNoLock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		mem := []*memnode.Node{memnode.New("m0"), memnode.New("m1"), memnode.New("m2")}
		var nodes []node.Node
		for _, m := range mem {
			nodes = append(nodes, slowNode{Node: m, delay: 410 * time.Millisecond})
		}
		c, err := redlock.New(nodes, redlock.WithRetry(retry.Never()), redlock.WithNodeTimeout(390*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		key := uniqueKey(t)
		_, err = c.TryAcquire(context.Background(), key, 400*time.Millisecond)
		if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "validity") {
			t.Fatalf("err = %v, want ErrNotAcquired for used-up validity", err)
		}
		synctest.Wait()
		for i, m := range mem {
			if h, err := m.Inspect(context.Background(), c.KeyName(key)); err != nil || h.Token != "" {
				t.Fatalf("refused acquisition left a key on node %d: %+v, %v", i, h, err)
			}
		}
	})
}

// Rule 5: a waiter comes back when the holder's key expires, not after the
// policy's (long) delay.
func TestRuleWaiterWakesAtHolderExpiry(t *testing.T) {
	t.Parallel()
	// A retry delay far past the test's context: the waiter gets the lock
	// in time only by coming back at the holder's expiry.
	cl, c := start(t, 5, redlock.WithRetry(retry.Constant(3, 10*time.Minute, 0)))
	key := uniqueKey(t)
	setOn(t, cl, c.KeyName(key), "crashed-holder", 400*time.Millisecond, 0, 1, 2, 3, 4)
	began := time.Now()
	l, err := c.Acquire(ctxFor(t), key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Fatalf("acquired after %s, before the holder's 400ms expiry", took)
	}
}

// TestValidityIsTTLLessDriftFromTheAttemptStart: an acquired lock is valid
// until its attempt's start + ttl - (ttl*0.01 + 2ms) with the default drift
// factor, the README's formula: never later than that counted from when the
// call returned, never earlier than that counted from when it was made.
func TestValidityIsTTLLessDriftFromTheAttemptStart(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	const ttl = 10 * time.Second
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	for range 5 {
		began := time.Now()
		l, err := c.TryAcquire(ctx, uniqueKey(t), ttl)
		ended := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		vu := l.ValidUntil()
		if vu.Before(began.Add(ttl-drift)) || vu.After(ended.Add(ttl-drift)) {
			t.Fatalf("ValidUntil %v, want within [%v, %v]: the attempt's start + ttl - drift",
				vu, began.Add(ttl-drift), ended.Add(ttl-drift))
		}
		if rem := l.Remaining(); rem > ttl-drift {
			t.Fatalf("Remaining %s, want at most ttl - drift = %s", rem, ttl-drift)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A first wait makes exactly as many attempts as the policy
// allows, 1 + retries (v1: one more, when the subscription came up).
func TestFirstWaitAttemptsMatchPolicy(t *testing.T) {
	t.Parallel()
	cl, holder := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	if _, err := holder.Acquire(ctx, key, time.Minute); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	c := newClient(t, nodesOf(cl), redlock.WithRetry(retry.Constant(3, 100*time.Millisecond, 0)),
		redlock.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Attempt {
				attempts.Add(1)
			}
		})))
	if _, err := c.Acquire(ctx, key, time.Minute); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	if n := attempts.Load(); n != 4 {
		t.Fatalf("%d attempts, want 1 + 3 retries", n)
	}
}
