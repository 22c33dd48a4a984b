package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// ContextWithRetry replaces the client's retry policy for one call: the
// call makes the attempts of its own policy, the next call those of the
// client's again; a nil or invalid policy is refused before anything is
// sent.
func TestContextWithRetryIsPerCall(t *testing.T) {
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	var attempts atomic.Int64
	count := observe.Func(func(e observe.Event) {
		if e.Kind == observe.Attempt {
			attempts.Add(1)
		}
	})
	waiter, err := redlock.New(nodes, redlock.WithRetry(retry.Constant(5, time.Millisecond, 0)), redlock.WithObserver(count))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = waiter.Close() }()
	holder, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	held, err := holder.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(context.Background()) }()

	for _, tc := range []struct {
		name string
		ctx  context.Context
		want int64
	}{
		{"one retry", redlock.ContextWithRetry(ctx, retry.Constant(1, time.Millisecond, 0)), 2},
		{"never", redlock.ContextWithRetry(ctx, retry.Never()), 1},
		{"the client's policy", ctx, 6},
	} {
		attempts.Store(0)
		_, err := waiter.Acquire(tc.ctx, "k", time.Second)
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s: Acquire = %v, want ErrNotAcquired", tc.name, err)
		}
		if got := attempts.Load(); got != tc.want {
			t.Errorf("%s: %d attempts, want %d", tc.name, got, tc.want)
		}
	}
	attempts.Store(0)
	err = waiter.Do(redlock.ContextWithRetry(ctx, retry.Never()), "k", time.Second, func(context.Context) error { return nil })
	if !errors.Is(err, redlock.ErrNotAcquired) || attempts.Load() != 1 {
		t.Errorf("Do with retry.Never: %v after %d attempts, want ErrNotAcquired after 1", err, attempts.Load())
	}
	for name, p := range map[string]retry.Policy{"nil": nil, "negative count": retry.Constant(-1, time.Millisecond, 0)} {
		attempts.Store(0)
		_, err := waiter.Acquire(redlock.ContextWithRetry(ctx, p), "free", time.Second)
		if !errors.Is(err, redlock.ErrInvalidArgument) || attempts.Load() != 0 {
			t.Errorf("%s policy: %v after %d attempts, want ErrInvalidArgument before any", name, err, attempts.Load())
		}
	}
}

// delayedHolderEnv makes the test binary a holder with a lock-delay that
// prints its lock and waits to be killed (TestHelperDelayedHolder).
const delayedHolderEnv = "QUORUMLOCK_TEST_DELAYED_HOLDER"

const (
	delayedTTL = time.Second
	lockDelay  = 10 * time.Second
)

// A holder with a lock-delay is killed (SIGKILL: no release). Once its
// lock's validity is over by the nodes' clock, the nodes still keep the key
// for the delay: an attempt then is refused. A waiter gets the key after
// the delay, with a TookOver report naming the killed holder.
func TestLockDelayAfterKilledHolder(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperDelayedHolder$")
	cmd.Env = append(os.Environ(), delayedHolderEnv+"="+strings.Join(cl.Addrs(), ",")+"|"+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var holder string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if h, ok := strings.CutPrefix(sc.Text(), "HOLDING "); ok {
			holder = h
			break
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if holder == "" {
		t.Fatal("the holder process never reported its lock")
	}
	// The holder's validity began before it printed, so it is over by
	// this node time plus the TTL; the nodes keep the key the delay longer.
	rc := cl.Clients()[0]
	printed, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	name := "lock:{" + key + "}"
	// (A majority: the holder was killed right after its acquisition
	// returned, maybe before its request reached the last node.)
	delayed := 0
	for _, c := range cl.Clients() {
		if holdLeft(ctx, c, name) > delayedTTL {
			delayed++
		}
	}
	if delayed < 2 {
		t.Fatalf("the killed holder's key lives its TTL %s and the delay on %d nodes, want a majority", delayedTTL, delayed)
	}
	for now := printed; now.Sub(printed) <= delayedTTL; {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if now, err = rc.Time(ctx).Result(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, nodesOf(cl), patient)
	if _, err := c.TryAcquire(ctx, key, 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("attempt after the killed holder's validity ended, within its delay: %v, want ErrNotAcquired", err)
	}
	l, err := c.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if prev, ok := l.TookOver(); !ok || prev.Holder != holder {
		t.Fatalf("TookOver = %+v, %v; want the killed holder %s", prev, ok, holder)
	}
}

// A clean release ends the lock at once, delay or not: the next attempt
// acquires, and takes over from nobody.
func TestLockDelayNotAfterRelease(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	holder := newClient(t, nodesOf(cl), redlock.WithLockDelay(time.Hour))
	l, err := holder.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = holder.Close() // Release returns at a majority: let every node's release land
	l, err = newClient(t, nodesOf(cl)).TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatalf("attempt after a clean release: %v", err)
	}
	defer l.Release(ctx)
	if prev, ok := l.TookOver(); ok {
		t.Fatalf("after a release, TookOver = %+v", prev)
	}
}

func TestNegativeLockDelayRefused(t *testing.T) {
	t.Parallel()
	_, err := redlock.New([]node.Node{memnode.New("a")}, redlock.WithLockDelay(-time.Second))
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "lock delay -1s is negative") {
		t.Fatalf("WithLockDelay(-1s): %v, want ErrInvalidArgument saying the lock delay -1s is negative", err)
	}
}

// TestHelperDelayedHolder is the holder process of
// TestLockDelayAfterKilledHolder.
func TestHelperDelayedHolder(t *testing.T) {
	spec := os.Getenv(delayedHolderEnv)
	if spec == "" {
		t.Skip("only as the holder process of TestLockDelayAfterKilledHolder")
	}
	addrs, key, _ := strings.Cut(spec, "|")
	var nodes []node.Node
	for _, a := range strings.Split(addrs, ",") {
		nodes = append(nodes, redisnode.New(redisClient(a)))
	}
	c, err := redlock.New(nodes, redlock.WithLockDelay(lockDelay))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.TryAcquire(context.Background(), key, delayedTTL)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("HOLDING " + node.ReleaseID(l.Token()))
	time.Sleep(time.Hour) // until killed
}

func TestOwnerDefaultIsHostPidProgram(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	host, _ := os.Hostname()
	want := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), filepath.Base(os.Args[0]))
	if l.Owner() != want {
		t.Fatalf("Owner() = %q, want %q", l.Owner(), want)
	}
	if d := time.Since(l.AcquiredAt()); d < 0 || d > time.Minute {
		t.Fatalf("AcquiredAt %s is not this acquisition's time", l.AcquiredAt())
	}
	info, err := c.Inspect(ctx, l.Key())
	if err != nil {
		t.Fatal(err)
	}
	if info.Owner != want || !info.AcquiredAt.Equal(l.AcquiredAt()) || info.Fence < l.Fence() {
		t.Fatalf("Inspect = owner %q at %s fence %d, want %q at %s fence >= %d",
			info.Owner, info.AcquiredAt, info.Fence, want, l.AcquiredAt(), l.Fence())
	}
	if _, ok := l.TookOver(); ok {
		t.Fatal("the first acquisition of a key reports a takeover")
	}
}

func TestOwnerBadInput(t *testing.T) {
	t.Parallel()
	m := []node.Node{memnode.New("a")}
	for name, owner := range map[string]string{
		"empty": "", "newline": "w\n1", "NUL": "w\x00", "invalid UTF-8": "w\xff", "too long": strings.Repeat("w", node.MaxOwnerLen+1),
	} {
		if _, err := redlock.New(m, redlock.WithOwner(owner)); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("WithOwner(%s): err = %v, want ErrInvalidArgument", name, err)
		}
	}
	c := newClient(t, m, redlock.WithOwner("worker 1 — ünïcode"))
	ctx := ctxFor(t)
	var nilCtx context.Context
	_, errI := c.Inspect(ctx, "")
	_, errI2 := c.Inspect(ctx, "}x")
	_, errI3 := c.Inspect(nilCtx, "k")
	_, errF := c.ForceRelease(ctx, "", "")
	_, errF2 := c.ForceRelease(nilCtx, "k", "")
	for i, err := range []error{errI, errI2, errI3, errF, errF2} {
		if !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("call %d: err = %v, want ErrInvalidArgument", i, err)
		}
	}
	for _, p := range []string{"", "job[", `job\`, "[^a"} {
		n := 0
		for _, err := range c.Locks(ctx, p) {
			n++
			if !errors.Is(err, redlock.ErrInvalidArgument) {
				t.Errorf("Locks(%q): err = %v, want ErrInvalidArgument", p, err)
			}
		}
		if n != 1 {
			t.Errorf("Locks(%q) yielded %d items, want the one error", p, n)
		}
	}
	for range c.Locks(nilCtx, "*") {
	}
	// A force release of a free key changes nothing and says so.
	if _, err := c.ForceRelease(ctx, "free", ""); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("ForceRelease of a free key: %v, want ErrLockLost", err)
	}
}

// ContextWithOwner records its owner instead of the client's, for that
// acquisition only; Inspect and the Lock report it.
func TestContextWithOwner(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3, redlock.WithOwner("client-owner"))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.TryAcquire(redlock.ContextWithOwner(ctx, "candidate-7"), key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner() != "candidate-7" || info.Owner != "candidate-7" {
		t.Fatalf("Owner = %q, Inspect's %q; want candidate-7", l.Owner(), info.Owner)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = c.TryAcquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Owner() != "client-owner" {
		t.Fatalf("Owner = %q without ContextWithOwner, want client-owner", l.Owner())
	}
	if _, err := c.TryAcquire(redlock.ContextWithOwner(ctx, ""), key+"x", time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("empty owner: %v, want ErrInvalidArgument", err)
	}
}
