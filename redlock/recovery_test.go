package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// recoveringLog records the nodes a client reported as recovering.
type recoveringLog struct {
	mu    sync.Mutex
	seen  []*redlock.NodeError
	count map[string]int
}

func (l *recoveringLog) Observe(e observe.Event) {
	var re *redlock.NodeError
	if e.Kind != observe.Node || e.Reason != "recovering" || !errors.Is(e.Err, redlock.ErrRecovering) || !errors.As(e.Err, &re) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == nil {
		l.count = map[string]int{}
	}
	l.seen = append(l.seen, re)
	l.count[re.Node]++
}

func (l *recoveringLog) of(name string) (n int, all []*redlock.NodeError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.seen {
		if e.Node == name {
			all = append(all, e)
		}
	}
	return l.count[name], all
}

// recoveringTimes reads the marker's age and the time left that a
// recovering node's error states.
func recoveringTimes(t *testing.T, e *redlock.NodeError) (age, remaining time.Duration) {
	t.Helper()
	m := regexp.MustCompile(`lost its data for the key (\S+) ago, recovering for (\S+) more`).FindStringSubmatch(e.Error())
	if m == nil {
		t.Fatalf("recovering error %q does not say how long", e)
	}
	age, err1 := time.ParseDuration(m[1])
	remaining, err2 := time.ParseDuration(m[2])
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return age, remaining
}

// markerAge reads the age of a lock's data marker on one server, by that
// server's clock (0 when missing).
func markerAge(t *testing.T, n *redistest.Node, name string) time.Duration {
	t.Helper()
	ctx := ctxFor(t)
	v, err := n.Client().Get(ctx, wire.MarkerKey(name)).Result()
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(v, " ") // "since creator"
	since, _ := strconv.ParseInt(first, 10, 64)
	now, err := n.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.Sub(time.UnixMicro(since))
}

// waitMarkerOlder waits until the marker on n is older than d: the ages
// are the nodes' own, so the wait is for a state, not a duration.
func waitMarkerOlder(t *testing.T, n *redistest.Node, name string, d time.Duration) {
	t.Helper()
	ctx := ctxFor(t)
	for markerAge(t, n, name) <= d {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			t.Fatalf("marker of %s on %v never got older than %s", name, n, d)
		}
	}
}

// The holder holds 3 of 5 nodes (two were down when it acquired, and came
// back empty); FLUSHALL on 2 of its 3 leaves its key on one node. A
// competitor would get 4 yes votes from nodes that do not know the key; the
// one node that kept it shows they lost their data, so none counts, and
// nobody acquires while the holder holds.
func TestFlushAllOfTwoNodesKeepsHeldLockExclusive(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 5)
	log := &recoveringLog{}
	// The holder's requests to the down nodes are not retried: they fail,
	// and never land after the restart.
	var holderNodes []node.Node
	for _, n := range cl.Nodes() {
		rc := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { _ = rc.Close() })
		holderNodes = append(holderNodes, redisnode.New(rc))
	}
	holder := newClient(t, holderNodes, redlock.WithNodeTimeout(testNodeTimeout))
	competitor := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(log))
	ctx, key := ctxFor(t), uniqueKey(t)
	name := "lock:{" + key + "}"
	nodes := cl.Nodes()
	for _, i := range []int{3, 4} {
		if err := nodes[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := holder.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if h := holders(t, cl, name); countEqual(h, l.Token()) != 3 {
		t.Fatalf("the holder holds %v, want 3 nodes", h)
	}
	for _, i := range []int{3, 4} {
		if err := nodes[i].Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitMarkerOlder(t, nodes[2], name, testNodeTimeout+100*time.Millisecond)
	for _, i := range []int{0, 1} {
		if err := nodes[i].Client().FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	acquired := 0
	for range 3 {
		l2, err := competitor.TryAcquire(ctx, key, 30*time.Second)
		if err == nil {
			acquired++
			_ = l2.Release(ctx)
			continue
		}
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("competitor: %v, want ErrNotAcquired", err)
		}
	}
	if acquired > 0 {
		t.Fatalf("a competitor acquired %d time(s) while the holder held the key on a majority before the flush", acquired)
	}
	// An attempt decided before a slow node's answer is counted does not
	// report that node: only the sum over the nodes that lost data counts.
	reported := 0
	for _, i := range []int{0, 1, 3, 4} {
		n, _ := log.of(nodes[i].Addr())
		reported += n
	}
	if reported == 0 {
		t.Errorf("no node that lost its data was reported recovering")
	}
	if n, _ := log.of(nodes[2].Addr()); n != 0 {
		t.Errorf("%v kept its data but was reported recovering", nodes[2])
	}
	// The holder's key is left on one node: its release reports the loss.
	if err := l.Release(ctx); err != nil && !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("the holder's release: %v", err)
	}
}

// A node restarted empty sits out until its marker for the key reaches the
// recovery period, and counts again from then: with another node down, the
// acquisitions that succeed are the ones that needed its yes.
func TestRestartedNodeCountsAfterRecoveryPeriod(t *testing.T) {
	t.Parallel()
	const period = 5 * time.Second
	cl := redistest.StartT(t, 3)
	log := &recoveringLog{}
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period),
		redlock.WithObserver(log))
	ctx, key := ctxFor(t), uniqueKey(t)
	name := "lock:{" + key + "}"
	ttl := 3 * time.Second
	l, err := c.TryAcquire(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := cl.Nodes()
	waitMarkerOlder(t, nodes[2], name, testNodeTimeout+100*time.Millisecond)
	if err := nodes[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for {
		l, err := c.TryAcquire(ctx, key, ttl)
		if err == nil {
			if h := holders(t, cl, name); h[0] != l.Token() {
				t.Fatalf("acquired without the restarted node: holders %v", h)
			}
			_ = l.Release(ctx)
			break
		}
		if !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
			t.Fatalf("attempt while %v recovers: %v", nodes[0], err)
		}
		refused++
		_ = sleepCtx(ctx, 200*time.Millisecond)
	}
	n, reports := log.of(nodes[0].Addr())
	if refused == 0 || n != refused {
		t.Fatalf("%d attempts refused, %d reports of the restarted node recovering: want as many, at least one", refused, n)
	}
	for _, r := range reports {
		age, remaining := recoveringTimes(t, r)
		if age >= period || (age+remaining-period).Abs() > time.Millisecond { // both rounded to the millisecond
			t.Fatalf("reported recovering at age %s (remaining %s) with a period of %s", age, remaining, period)
		}
	}
	if age := markerAge(t, nodes[0], name); age < period {
		t.Fatalf("the restarted node counted at marker age %s, before the period %s", age, period)
	}
}

// A fresh deployment (every marker new, written by one round) acquires at
// once, and nobody is reported recovering.
func TestFreshDeploymentAcquiresAtOnce(t *testing.T) {
	t.Parallel()
	log := &recoveringLog{}
	_, c := start(t, 5, redlock.WithObserver(log))
	ctx := ctxFor(t)
	for range 3 {
		key := uniqueKey(t)
		l, err := c.TryAcquire(ctx, key, 5*time.Second)
		if err != nil {
			t.Fatalf("first acquisition of a new key: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l, err = c.TryAcquire(ctx, key, 5*time.Second)
		if err != nil {
			t.Fatalf("second acquisition of a new key: %v", err)
		}
		_ = l.Release(ctx)
	}
	if len(log.seen) != 0 {
		t.Fatalf("nodes reported recovering on a fresh deployment: %v", log.seen[0])
	}
}

// A TTL longer than the recovery period is refused, typed, and nothing is
// held anywhere.
func TestTTLLongerThanRecoveryPeriodRefused(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithRecoveryPeriod(3*time.Second))
	ctx, key := ctxFor(t), uniqueKey(t)
	_, err := c.TryAcquire(ctx, key, 4*time.Second)
	const says = "ttl 4s is longer than the recovery period 3s"
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), says) {
		t.Fatalf("TryAcquire with a TTL over the recovery period = %v, want ErrInvalidArgument saying %q", err, says)
	}
	if _, err := c.Acquire(ctx, key, 4*time.Second); !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), says) {
		t.Fatalf("Acquire with a TTL over the recovery period = %v", err)
	}
	if h := holders(t, cl, "lock:{"+key+"}"); countEqual(h, "") != len(h) {
		t.Fatalf("a refused TTL left keys: %v", h)
	}
	if _, err := redlock.New(nodesOf(cl), redlock.WithRecoveryPeriod(-time.Second)); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("New with a negative recovery period = %v", err)
	}
}

// Inspect shows which nodes sit out of a key and for how long: a node
// flushed under a held lock is recovering for the whole period (it has no
// marker yet), then, once an acquisition wrote its marker, for the period
// less the marker's age; the nodes that kept the key are not. A client with
// recovery off shows none.
func TestInspectShowsRecoveringNode(t *testing.T) {
	t.Parallel()
	const period = time.Minute
	cl := redistest.StartT(t, 3)
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period))
	ctx, key := ctxFor(t), uniqueKey(t)
	name := "lock:{" + key + "}"
	if _, err := c.TryAcquire(ctx, key, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	nodes := cl.Nodes()
	waitMarkerOlder(t, nodes[2], name, testNodeTimeout+100*time.Millisecond)
	if err := nodes[0].Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	recovering := func(c *redlock.Client) (n int, info redlock.Info) {
		t.Helper()
		info, err := c.Inspect(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, ni := range info.Nodes {
			if ni.Recovering > 0 {
				n++
			}
		}
		return n, info
	}
	n, info := recovering(c)
	if n != 1 || info.Nodes[0].Recovering != period || info.Nodes[0].DataAge != 0 || info.Nodes[1].DataAge <= testNodeTimeout {
		t.Fatalf("after FLUSHALL of n1: %d nodes recovering, want n1 for the whole period %s: %+v", n, period, info.Nodes)
	}
	if _, err := c.TryAcquire(ctx, key, 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("competing acquire: %v, want ErrNotAcquired", err)
	}
	n, info = recovering(c)
	if r := info.Nodes[0]; n != 1 || r.Recovering <= 0 || r.Recovering != period-r.DataAge {
		t.Fatalf("after an acquisition wrote n1's marker: %d nodes recovering, want n1 for the period less its marker's age: %+v", n, info.Nodes)
	}
	off := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(0))
	if n, info := recovering(off); n != 0 {
		t.Fatalf("recovery off: %d nodes recovering, want none: %+v", n, info.Nodes)
	}
}

// heldBackNode keeps the first acquire from its node (it fails, as a
// request still in flight when the client decided) and records its
// arguments, so that the test delivers it later.
type heldBackNode struct {
	Node
	done atomic.Bool
	args node.AcquireArgs
}

func (h *heldBackNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if h.done.CompareAndSwap(false, true) {
		h.args = a
		return node.AcquireReply{}, errors.New("held back")
	}
	return h.Node.Acquire(ctx, a)
}

// A node that processes a key's first acquisition long after the others (a
// straggler, a slow server) wrote its marker with that same acquisition: it
// lost nothing, and counts at once. With another node down, the next
// acquisition needs its yes.
func TestLateFirstAcquireOfKeyDoesNotSitOut(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	nodes := cl.Nodes()
	late := &heldBackNode{Node: redisnode.New(nodes[2].Client())}
	log := &recoveringLog{}
	c := newClient(t, []node.Node{redisnode.New(nodes[0].Client()), redisnode.New(nodes[1].Client()), late},
		redlock.WithNodeTimeout(testNodeTimeout), redlock.WithObserver(log))
	ctx, key := ctxFor(t), uniqueKey(t)
	name := "lock:{" + key + "}"
	l, err := c.TryAcquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The first acquisition reaches the third node well past the slack,
	// by the first node's clock.
	waitMarkerOlder(t, nodes[0], name, testNodeTimeout+100*time.Millisecond)
	r, err := late.Node.Acquire(ctx, late.args)
	if err != nil {
		t.Fatal(err)
	}
	if r.DataAge >= testNodeTimeout || r.DataCreator != uint64(late.args.At.UnixMicro()) {
		t.Fatalf("the late acquire = %+v: want a new marker by the first acquisition", r)
	}
	if r.Acquired {
		if _, err := late.Node.Release(ctx, node.ReleaseArgs{Name: name, Token: late.args.Token}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	l, err = c.TryAcquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatalf("acquire with the late node's yes: %v", err)
	}
	if h := holders(t, cl, name); h[2] != l.Token() {
		t.Fatalf("acquired without the late node: holders %v", h)
	}
	if n, _ := log.of(nodes[2].Addr()); n != 0 {
		t.Fatalf("the late node kept its data but was reported recovering %d time(s)", n)
	}
	_ = l.Release(ctx)
}

// writeMarker sets the marker of name on n as a node writes it, "since
// creator touched", with since and touched that long ago by n's clock.
func writeMarker(t *testing.T, n *redistest.Node, name string, age, touchedAgo time.Duration) {
	t.Helper()
	ctx := ctxFor(t)
	now, err := n.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	v := fmt.Sprintf("%d 1 %d", now.Add(-age).UnixMicro(), now.Add(-touchedAgo).UnixMicro())
	if err := n.Client().Set(ctx, wire.MarkerKey(name), v, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
}

// The markers of an idle key expire a few milliseconds apart on different
// nodes: an acquisition between finds new markers on some nodes and an old
// one, untouched for longer than the recovery period, on another. No lock
// can be held (every lock touches the markers within its TTL), so the nodes
// with new markers count. A marker touched within the period still sits
// them out: a lock may hold the key there.
func TestIdleKeyMarkersExpiringApartDoNotSitOut(t *testing.T) {
	t.Parallel()
	const period = time.Minute
	cl := redistest.StartT(t, 3)
	log := &recoveringLog{}
	c := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period),
		redlock.WithObserver(log))
	ctx := ctxFor(t)
	nodes := cl.Nodes()

	idle := uniqueKey(t)
	writeMarker(t, nodes[2], "lock:{"+idle+"}", time.Hour, 2*period)
	l, err := c.TryAcquire(ctx, idle, 30*time.Second)
	if err != nil {
		t.Fatalf("acquire of an idle key whose markers expired apart: %v", err)
	}
	_ = l.Release(ctx)
	for _, n := range nodes {
		if got, _ := log.of(n.Addr()); got != 0 {
			t.Fatalf("%v reported recovering %d time(s) for an idle key", n, got)
		}
	}

	touched := uniqueKey(t)
	writeMarker(t, nodes[2], "lock:{"+touched+"}", time.Hour, period/2)
	if _, err := c.TryAcquire(ctx, touched, 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("acquire against a marker touched within the period: %v, want ErrNotAcquired", err)
	}
	for _, n := range nodes[:2] {
		if got, _ := log.of(n.Addr()); got == 0 {
			t.Errorf("%v has a new marker beside one touched within the period, but was not reported recovering", n)
		}
	}
}

// A node that lost a held key, beside an idle marker on another node,
// looks like an idle key whose markers expired apart until the node that
// kept the key answers. On 3 real nodes, with a key used long ago: a
// holder has it on nodes 0 and 2, node 1's marker stays untouched for
// twice the period, and node 0 is flushed. A competitor whose node 2 answers far later than the
// others is refused: it hears node 2 before it counts node 0.
func TestLostKeyBesideIdleMarkerHearsSlowKeeper(t *testing.T) {
	t.Parallel()
	const period = time.Minute
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	opts := []redlock.Option{redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period)}
	for _, n := range cl.Nodes() { // a key used long ago, idle since
		writeMarker(t, n, "lock:{"+key+"}", time.Hour, 2*period)
	}
	all := nodesOf(cl)
	holder := newClient(t, []node.Node{all[0], all[2]}, opts...)
	held, err := holder.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[0].FlushAll(ctx); err != nil {
		t.Fatal(err)
	}

	mine := nodesOf(cl)
	mine[2] = slowNode{Node: mine[2].(Node), delay: 300 * time.Millisecond}
	c := newClient(t, mine, opts...)
	if l, err := c.TryAcquire(ctx, key, 30*time.Second); err == nil {
		t.Fatalf("acquired (fence %d) while the holder keeps the key on node 2 (holder's fence %d)", l.Fence(), held.Fence())
	} else if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
}
