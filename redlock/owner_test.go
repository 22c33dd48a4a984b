package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/statuslock"
	"github.com/redis/go-redis/v9"
)

// Owner identity, Inspect, ForceRelease and TookOver on real redis-server
// nodes.

// patient waits for a lock held by others up to a minute: verdicts must not
// depend on the machine's speed.
var patient = redlock.WithRetry(retry.Constant(600, 100*time.Millisecond, 20*time.Millisecond))

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

func TestInspectHeldAndFree(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithOwner("inspector-test"))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	info, err := c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if info.Held || !info.Agree || info.Owner != "" || len(info.Nodes) != 3 || info.Key != key {
		t.Fatalf("a free key: %+v", info)
	}
	l, err := c.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// TryAcquire returns at a majority: the third node's acquire may land
	// later on a loaded machine.
	settled(t, cl, c.KeyName(key), l.Token())
	info, err = c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || !info.Agree || info.Owner != "inspector-test" || info.Fence < l.Fence() ||
		info.Holder != node.ReleaseID(l.Token()) || info.Remaining <= 0 || info.Remaining > 30*time.Second {
		t.Fatalf("a held key: %+v (fence %d)", info, l.Fence())
	}
	for i, ni := range info.Nodes {
		if !ni.Held || ni.Node != c.Nodes()[i].Name() || ni.Owner != "inspector-test" || ni.Err != nil {
			t.Fatalf("node %d: %+v", i, ni)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Inspect(ctx, key); info.Held || info.Fence < l.Fence() {
		t.Fatalf("after release: %+v, want free with a counter >= %d", info, l.Fence())
	}
}

// After a node restarts empty, Inspect still finds the holder on the
// majority, says the nodes disagree, and shows each node as it is; the
// holder's extension puts the key (with its owner) back, and they agree.
func TestInspectAgreesWithNodesAfterRestart(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithOwner("restart-test"))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	// TryAcquire returns at a majority: the third node's acquire must land
	// before the restart, or go-redis resends it to the restarted node.
	settled(t, cl, c.KeyName(key), l.Token())
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Agree || info.Owner != "restart-test" {
		t.Fatalf("after a restart: held %v agree %v owner %q, want held by restart-test, nodes disagreeing", info.Held, info.Agree, info.Owner)
	}
	for i, nd := range c.Nodes() {
		h, err := nd.(node.Inspector).Inspect(ctx, c.KeyName(key))
		if err != nil {
			t.Fatal(err)
		}
		ni := info.Nodes[i]
		if ni.Held != (h.Token != "") || ni.Owner != h.Owner || ni.Fence != h.Fence || ni.Held != (i != 0) {
			t.Fatalf("node %d: Inspect says %+v, the node %+v", i, ni, h)
		}
	}
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Extend returns at a majority: node 0's re-assert may still be on its
	// way (it was, under load).
	await(t, "node 0 re-asserted", time.Minute, func() bool {
		h, err := c.Nodes()[0].(node.Inspector).Inspect(ctx, c.KeyName(key))
		return err == nil && h.Token != ""
	})
	info, err = c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || !info.Agree || info.Nodes[0].Owner != "restart-test" || !info.Nodes[0].AcquiredAt.Equal(l.AcquiredAt()) {
		t.Fatalf("after the extension re-asserted node 0: %+v", info)
	}
}

// The operator's force release evicts the holder: the next holder gets a
// larger fence and sees whom it took over from, the fenced store refuses
// the evicted holder's late write, and the evicted holder's next
// extension reports the loss.
func TestForceReleaseFencesEvictedHolder(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	stuck := newClient(t, nodesOf(cl), redlock.WithOwner("stuck-deployer"))
	next := newClient(t, nodesOf(cl), redlock.WithOwner("next-deployer"), patient)
	operator := newClient(t, nodesOf(cl), redlock.WithOwner("operator"))
	ctx := ctxFor(t)
	store := statuslock.NewMemoryStore()
	key := "status:" + uniqueKey(t)

	old, err := stuck.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, "svc", statuslock.StatusDeploying, old.Fence()); err != nil {
		t.Fatal(err)
	}
	seen, err := operator.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := operator.ForceRelease(ctx, key, "0123456789abcdef"); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("ForceRelease naming another holder: %v, want ErrLockLost", err)
	}
	if err := old.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("a refused force release took the lock: %v", err)
	}
	evicted, err := operator.ForceRelease(ctx, key, seen.Holder)
	if err != nil {
		t.Fatal(err)
	}
	if evicted.Owner != "stuck-deployer" || evicted.Fence < old.Fence() || evicted.Holder != node.ReleaseID(old.Token()) {
		t.Fatalf("ForceRelease evicted %+v, want stuck-deployer with fence >= %d", evicted, old.Fence())
	}
	l, err := next.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Fence() <= old.Fence() {
		t.Fatalf("new fence %d is not above the evicted %d", l.Fence(), old.Fence())
	}
	prev, ok := l.TookOver()
	if !ok || prev.Owner != "stuck-deployer" || !tookOverFence(prev.Fence, old.Fence(), l.Fence()) {
		t.Fatalf("TookOver = %+v, %v; want stuck-deployer with fence in [%d, %d)", prev, ok, old.Fence(), l.Fence())
	}
	if err := store.Set(ctx, "svc", statuslock.StatusRunning, l.Fence()); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, "svc", statuslock.StatusFailed, old.Fence()); !errors.Is(err, statuslock.ErrStaleFence) {
		t.Fatalf("the evicted holder's late write: %v, want ErrStaleFence", err)
	}
	if err := old.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("the evicted holder's extension: %v, want ErrLockLost", err)
	}
	select {
	case <-old.Done():
	case <-ctx.Done():
		t.Fatal("Done never closed after the lost extension")
	}
	if !errors.Is(old.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", old.Err())
	}
	if info, err := operator.Inspect(ctx, key); err != nil || info.Owner != "next-deployer" || !info.Held {
		t.Fatalf("after the eviction: %+v, %v; want held by next-deployer", info, err)
	}
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
	for _, rc := range cl.Clients() {
		for rc.Exists(ctx, crashed.KeyName(key)).Val() == 1 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
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
	for _, rc := range cl.Clients() {
		for rc.Exists(ctx, crashed.KeyName(key)).Val() == 0 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
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

func redisClient(addr string) *redis.Client { return redis.NewClient(&redis.Options{Addr: addr}) }

// Counters that lag the evicted holder's fence (nodes restored from an old
// snapshot) are raised by the force release: a new holder on those nodes
// alone still gets a larger fence.
func TestForceReleaseRaisesLaggingCounters(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(2*time.Second))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	holder := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(2*time.Second))
	old, err := holder.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// TryAcquire returns at a majority; Close waits for the last node's
	// acquisition, which must not land after the counters are set back.
	_ = holder.Close()
	for _, rc := range cl.Clients()[1:] {
		if err := rc.Set(ctx, wire.CounterKey(c.KeyName(key)), old.Fence()-100, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ForceRelease(ctx, key, ""); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[0].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[0].Resume() })
	l, err := c.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence() <= old.Fence() {
		t.Fatalf("fence %d on the lagging nodes is not above the evicted holder's %d", l.Fence(), old.Fence())
	}
}

// tookOverFence checks TookOver's fence: at least the previous holder's
// (a node that answered its acquisition late may have counted higher) and
// below ours.
func tookOverFence(got, previous, ours uint64) bool { return got >= previous && got < ours }

// A force release is announced: a waiter of another client, whose retry
// delay is ten minutes, is woken by it and takes the lock (without the
// announcement it would sleep past the test's hang guard).
func TestForceReleaseWakesWaiter(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	holder := newClient(t, nodesOf(cl), redlock.WithOwner("stuck"))
	operator := newClient(t, nodesOf(cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	if _, err := holder.TryAcquire(ctx, key, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	attempts := make(chan struct{}, 16)
	waiter := newClient(t, nodesOf(cl), redlock.WithOwner("waiter"), redlock.WithRetry(retry.Constant(1, 10*time.Minute, 0)),
		redlock.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Contended {
				attempts <- struct{}{}
			}
		})))
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, key, time.Minute)
		if err == nil {
			if prev, ok := l.TookOver(); !ok || prev.Owner != "stuck" {
				err = fmt.Errorf("TookOver = %+v, %v; want the evicted holder", prev, ok)
			}
			_ = l.Release(context.Background())
		}
		got <- err
	}()
	<-attempts // the waiter found the lock held and sleeps
	if _, err := operator.ForceRelease(ctx, key, ""); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// A holder that keeps its lock alive (Do) learns of a force release at the
// watchdog's next extension: its work's context ends with a cause that
// wraps ErrLockLost, and Do returns it.
func TestForceReleaseEndsKeptLock(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	worker := newClient(t, nodesOf(cl), redlock.WithOwner("kept"))
	operator := newClient(t, nodesOf(cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	running := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- worker.Do(ctx, key, 3*time.Second, func(ctx context.Context) error {
			close(running)
			<-ctx.Done() // works until the lock ends
			if !errors.Is(context.Cause(ctx), redlock.ErrLockLost) {
				return fmt.Errorf("work's context ended with %v, want ErrLockLost", context.Cause(ctx))
			}
			return nil
		})
	}()
	<-running
	evicted, err := operator.ForceRelease(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if evicted.Owner != "kept" {
		t.Fatalf("evicted %+v, want the kept lock", evicted)
	}
	if err := <-done; !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Do returned %v, want ErrLockLost", err)
	}
}
