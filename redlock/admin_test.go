package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/statuslock"
)

// Locks lists exactly the keys that match and that a majority holds, among
// 10,000 other keys on each node: held keys that do not match, keys of
// another prefix, matching keys that were released (their counters and
// tombstones remain) and matching keys held on one node only.
func TestLocksListsMatchingHeldAmong10000(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	const prefix = "t[1]*:" // glob characters in the prefix must match literally
	c := newClient(t, nodesOf(cl), redlock.WithOwner("lister"), redlock.WithKeyPrefix(prefix))
	ctx := ctxFor(t)

	// 10,000 decoys on every node, written directly in the nodes' format:
	// held locks that do not match, and the matching keys under another
	// prefix.
	at := time.Now()
	for i, rc := range cl.Clients() {
		for batch := 0; batch < 10_000; batch += 1000 {
			pipe := rc.Pipeline()
			for j := batch; j < batch+1000; j++ {
				v := wire.LockValue(fmt.Sprintf("decoy%d", j), at, "decoy")
				pipe.Set(ctx, fmt.Sprintf("%s{batch:420:%d}", prefix, j), v, 5*time.Minute)
				pipe.Set(ctx, fmt.Sprintf("lock:{batch:42:%d}", j), v, 5*time.Minute)
				pipe.Set(ctx, fmt.Sprintf("%s{batch:42:%d}:fence", prefix, 100_000+j), "7", 5*time.Minute)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("node %d: %v", i, err)
			}
		}
	}
	// Matching keys held on one node only: not held.
	for j := range 10 {
		v := wire.LockValue(fmt.Sprintf("minority%d", j), at, "minority")
		if err := cl.Clients()[0].Set(ctx, fmt.Sprintf("%s{batch:42:m%d}", prefix, j), v, 5*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Matching keys acquired and released: free.
	for j := range 10 {
		l, err := c.TryAcquire(ctx, fmt.Sprintf("batch:42:r%d", j), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The ones to list.
	want := map[string]uint64{}
	for j := range 30 {
		key := fmt.Sprintf("batch:42:%d", j)
		if j == 29 {
			key = "batch:42:*star"
		}
		l, err := c.TryAcquire(ctx, key, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		want[key] = l.Fence()
	}

	var got []string
	for info, err := range c.Locks(ctx, "batch:42:*") {
		if err != nil {
			t.Fatal(err)
		}
		fence, ok := want[info.Key]
		if !ok {
			t.Errorf("listed %q (owner %q), which is not a held matching key", info.Key, info.Owner)
			continue
		}
		if !info.Held || info.Owner != "lister" || info.Fence < fence || !info.Agree {
			t.Errorf("%s listed as %+v, want held by lister with fence >= %d", info.Key, info, fence)
		}
		got = append(got, info.Key)
	}
	slices.Sort(got)
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if fmt.Sprint(got) != fmt.Sprint(keys) {
		t.Fatalf("listed %d keys %q\nwant %d %q", len(got), got, len(keys), keys)
	}

	// A narrower pattern, and stopping early.
	n := 0
	for info, err := range c.Locks(ctx, `batch:42:\*st?r`) {
		if err != nil || info.Key != "batch:42:*star" {
			t.Fatalf("escaped pattern listed %+v, %v", info, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("escaped pattern listed %d keys, want 1", n)
	}
	n = 0
	for range c.Locks(ctx, "batch:42:*") {
		if n++; n == 3 {
			break
		}
	}
}

// With one of three nodes silent Locks still lists every held key; with
// two silent it yields ErrQuorumUnreachable.
func TestLocksWithNodesDown(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(2*time.Second))
	ctx := ctxFor(t)
	for j := range 5 {
		// Not released: the servers go away with the test.
		if _, err := c.TryAcquire(ctx, fmt.Sprintf("down:%d", j), 5*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Nodes()[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[2].Resume() })
	n := 0
	for info, err := range c.Locks(ctx, "down:*") {
		if err != nil || !info.Held || info.Agree {
			t.Fatalf("with a node silent: %+v, %v; want held, nodes disagreeing", info, err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("listed %d of 5 held keys with one node silent", n)
	}
	if err := cl.Nodes()[1].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[1].Resume() })
	var last error
	for _, err := range c.Locks(ctx, "down:*") {
		last = err
	}
	if !errors.Is(last, redlock.ErrQuorumUnreachable) {
		t.Fatalf("with two of three nodes silent: %v, want ErrQuorumUnreachable", last)
	}
}

// A node without Inspector, ForceReleaser or Subscriber still takes and
// releases locks; the administrative calls that need a capability fail
// with a per-node error wrapping errors.ErrUnsupported, never a panic.
func TestNodeWithoutCapabilitiesGetsTypedErrors(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, bareNode{n})
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := ctxFor(t)
	key := uniqueKey(t)

	l, err := c.TryAcquire(ctx, key, testNodeTimeout*3)
	if err != nil {
		t.Fatalf("acquire on nodes without capabilities: %v", err)
	}
	wantUnsupported := func(call string, err error) {
		t.Helper()
		var ne *redlock.NodeError
		if !errors.Is(err, errors.ErrUnsupported) || !errors.As(err, &ne) {
			t.Errorf("%s on nodes without the capability: %v, want a *NodeError wrapping errors.ErrUnsupported", call, err)
		}
	}
	_, err = c.Inspect(ctx, key)
	wantUnsupported("Inspect", err)
	_, err = c.ForceRelease(ctx, key, "")
	wantUnsupported("ForceRelease", err)
	listed := 0
	for _, err := range c.Locks(ctx, "*") {
		wantUnsupported("Locks", err)
		listed++
		break
	}
	if listed == 0 {
		t.Error("Locks on nodes without Inspector yielded nothing, want its error")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release on nodes without capabilities: %v", err)
	}
}

// raiseGatedNode holds every RaiseFence until gate closes, after saying on
// raising that one began: an acquisition's fence settle, caught midway.
type raiseGatedNode struct {
	Node
	raising chan<- struct{}
	gate    <-chan struct{}
}

func (g raiseGatedNode) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	select {
	case g.raising <- struct{}{}:
	default:
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return g.Node.RaiseFence(ctx, name, token, fence, retention)
}

// uninspectableNode fails every Inspect: a node down for the look only.
type uninspectableNode struct{ Node }

func (uninspectableNode) Inspect(context.Context, string) (node.Holding, error) {
	return node.Holding{}, errors.New("down for this look")
}

// Info.Fence against the holder's fence when the nodes' counters drifted
// apart: node 0 counted far more than nodes 1 and 2. The acquisition is
// decided on nodes 0 and 1 (node 2's grant comes late), so its fence is
// node 0's count, and it returns once node 1 was raised to it. A look that
// cannot read node 0 reads less while that raise is in flight, and at
// least the holder's fence once the acquisition has returned.
func TestInspectFenceOnceAcquisitionReturned(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	real := nodesOf(cl)
	raising, raiseGate, lateGate := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	holder := newClient(t, []node.Node{real[0], raiseGatedNode{real[1].(Node), raising, raiseGate}, lateAnswerNode{real[2].(Node), lateGate}},
		redlock.WithNodeTimeout(testNodeTimeout))
	name := holder.KeyName(key)
	for i, count := range []int{1_000_000, 100, 100} {
		setCount(t, ctx, cl.Clients()[i], name, uint64(count))
	}
	looker := newClient(t, []node.Node{uninspectableNode{real[0].(Node)}, real[1], real[2]}, redlock.WithNodeTimeout(testNodeTimeout))

	type acquired struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan acquired, 1)
	go func() {
		l, err := holder.TryAcquire(ctx, key, time.Minute)
		done <- acquired{l, err}
	}()
	select {
	case <-raising: // decided on nodes 0 and 1; node 1's raise is held
	case a := <-done:
		t.Fatalf("TryAcquire returned without raising node 1: %v, %v", a.l, a.err)
	}
	for holders(t, cl, name)[2] == "" && ctx.Err() == nil { // node 2 granted too (its answer is held)
		time.Sleep(5 * time.Millisecond)
	}
	racing, err := looker.Inspect(ctx, key)
	close(raiseGate)
	a := <-done
	close(lateGate)
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.l.Release(ctx)
	if a.l.Fence() != 1_000_001 {
		t.Fatalf("holder's fence %d, want node 0's count 1000001", a.l.Fence())
	}
	if err != nil || !racing.Held || racing.Fence >= a.l.Fence() {
		t.Fatalf("look racing the settle = held %v, fence %d, %v; want held, fence below the holder's %d (the documented limit)",
			racing.Held, racing.Fence, err, a.l.Fence())
	}
	after, err := looker.Inspect(ctx, key)
	if err != nil || !after.Held || after.Fence < a.l.Fence() {
		t.Fatalf("look after TryAcquire returned = held %v, fence %d, %v; want held, fence >= the holder's %d",
			after.Held, after.Fence, err, a.l.Fence())
	}
}

// Info.Fence is the largest counter read, not the holder's fence: a node
// that granted the acquisition late, after it was decided without it,
// counted higher than the fence, and every look that reads it reports its
// count.
func TestInspectFenceAboveHoldersWhenCountersDrift(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	real := nodesOf(cl)
	gate := make(chan struct{})
	c := newClient(t, []node.Node{real[0], real[1], lateAnswerNode{real[2].(Node), gate}}, redlock.WithNodeTimeout(testNodeTimeout))
	name := c.KeyName(key)
	for i, count := range []int{100, 100, 1_000_000} {
		setCount(t, ctx, cl.Clients()[i], name, uint64(count))
	}
	l, err := c.TryAcquire(ctx, key, time.Minute)
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	for holders(t, cl, name)[2] != l.Token() && ctx.Err() == nil { // node 2's late grant
		time.Sleep(5 * time.Millisecond)
	}
	info, err := c.Inspect(ctx, key)
	if err != nil || !info.Held || l.Fence() != 101 || info.Fence != 1_000_001 {
		t.Fatalf("holder's fence %d; Inspect = held %v, fence %d, %v; want 101 and 1000001", l.Fence(), info.Held, info.Fence, err)
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
		setCount(t, ctx, rc, c.KeyName(key), old.Fence()-100)
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

// Released receives when another client releases the key that a waiter
// found held, and not for other keys.
func TestReleasedAnnouncesRelease(t *testing.T) {
	t.Parallel()
	cl, watcher := start(t, 3)
	holder := newClient(t, nodesOf(cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	// The first watcher starts the subscriptions, and hears their coming up
	// (a release may have gone unheard before): a second watcher, joining
	// once they are up, hears announcements only.
	first, err := watcher.Released(wctx, key)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the subscriptions never came up")
	}
	ch, err := watcher.Released(wctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// A release is announced when a waiting Acquire found the key held:
	// the watcher's single attempt on each key marks it.
	heldAndWaitedFor := func(key string) *redlock.Lock {
		t.Helper()
		l, err := holder.TryAcquire(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := watcher.Acquire(redlock.ContextWithRetry(ctx, retry.Never()), key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("watcher's attempt on a held key: %v, want ErrNotAcquired", err)
		}
		return l
	}
	if err := heldAndWaitedFor(key + "-other").Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := heldAndWaitedFor(key).Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("the release was never announced to Released's channel")
	}
	// The other key's release did not count: after the one receive, the
	// channel holds at most the merged announcements of key's release by
	// the other nodes. Nothing more arrives for the other key.
	time.Sleep(200 * time.Millisecond)
	select {
	case <-ch:
	default:
	}
	if err := heldAndWaitedFor(key + "-other").Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = holder.Close() // every node's release has landed and been announced
	time.Sleep(200 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("another key's release was announced on Released's channel")
	default:
	}
	if _, err := watcher.Released(ctx, ""); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("Released with an empty key: %v, want ErrInvalidArgument", err)
	}
}

// A release is announced when a waiting attempt found the key held, to a
// watcher that made no attempt too; an attempt that does not wait
// (TryAcquire) leaves the holder's value as it was.
func TestReleasedHearsAWaitedForRelease(t *testing.T) {
	t.Parallel()
	cl, watcher := start(t, 3)
	holder := newClient(t, nodesOf(cl))
	bystander := newClient(t, nodesOf(cl))
	ctx := ctxFor(t)
	key := uniqueKey(t)
	l, err := holder.TryAcquire(ctx, key, 5*time.Minute) // outlives the hang guard
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the holder's key on every node", 2*time.Minute, func() bool {
		return countEqual(holders(t, cl, holder.KeyName(key)), l.Token()) == 3
	})
	before := rawValues(t, cl, holder.KeyName(key))
	if _, err := bystander.TryAcquire(ctx, key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("bystander's attempt: %v, want ErrNotAcquired", err)
	}
	_ = bystander.Close() // its requests have all landed
	if after := rawValues(t, cl, holder.KeyName(key)); !slices.Equal(before, after) {
		t.Fatalf("the holder's values %q became %q after another client's attempt", before, after)
	}
	waiter := newClient(t, nodesOf(cl))
	if _, err := waiter.Acquire(redlock.ContextWithRetry(ctx, retry.Never()), key, 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("waiter's attempt: %v, want ErrNotAcquired", err)
	}
	_ = waiter.Close()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := watcher.Released(wctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("a release a waiter waited for was not announced to a watcher")
	}
}
