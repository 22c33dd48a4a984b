package redlock_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

// recoveringLog records the nodes a client reported as recovering.
type recoveringLog struct {
	mu    sync.Mutex
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
	l.count[re.Node]++
}

func (l *recoveringLog) of(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[name]
}

// sitsOutFor reads how long a recovering attempt's error says the nodes
// still sit out, at most.
func sitsOutFor(t *testing.T, err error) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`too few nodes kept their data, for up to (\S+) more`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error %q does not say how long the nodes sit out", err)
	}
	d, perr := time.ParseDuration(m[1])
	if perr != nil {
		t.Fatal(perr)
	}
	return d
}

// recoveringOpts are the options of the clients of these tests.
func recoveringOpts(period time.Duration, more ...redlock.Option) []redlock.Option {
	return append([]redlock.Option{redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period)}, more...)
}

// A majority wiped while the holder holds: 3 nodes, FLUSHALL on 2. The
// competitor's two yes votes come from learners, and the keeper's answer,
// however late (it is paused through the attempt, up to the node timeout),
// or never (paused past it), keeps them from counting: refused with
// ErrRecovering, each time, whatever the load.
func TestMajorityWipedKeeperHeardHoweverLate(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	log := &recoveringLog{}
	holder := newClient(t, nodesOf(cl), recoveringOpts(time.Minute)...)
	competitor := newClient(t, nodesOf(cl), recoveringOpts(time.Minute, redlock.WithObserver(log))...)
	ctx, key := ctxFor(t), uniqueKey(t)
	l, err := holder.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = holder.Close() // its requests still in flight have landed: none recreates the key after the flush
	nodes := cl.Nodes()
	for _, i := range []int{0, 1} {
		if err := nodes[i].FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	attempt := func(when string) {
		t.Helper()
		_ = competitor.Close() // the undo of its last attempt has landed: the learners are free
		l2, err := competitor.TryAcquire(ctx, key, 30*time.Second)
		if err == nil {
			_ = l2.Release(ctx)
			t.Fatalf("%s: a competitor acquired while the holder holds", when)
		}
		if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrRecovering) {
			info, _ := competitor.Inspect(ctx, key)
			t.Fatalf("%s: %v, want ErrNotAcquired and ErrRecovering; %+v", when, err, info)
		}
		if d := sitsOutFor(t, err); d <= 0 || d > time.Minute {
			t.Fatalf("%s: the nodes sit out for up to %s more, want within (0, 1m]", when, d)
		}
	}
	attempt("keeper answering")
	for _, pause := range []time.Duration{300 * time.Millisecond, testNodeTimeout + 500*time.Millisecond} {
		if err := nodes[2].Pause(); err != nil {
			t.Fatal(err)
		}
		resumed := make(chan error, 1)
		go func() { time.Sleep(pause); resumed <- nodes[2].Resume() }()
		attempt("keeper paused " + pause.String())
		if err := <-resumed; err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, 1} {
		if log.of(nodes[i].Addr()) == 0 {
			t.Errorf("%v lost its data but was never reported recovering", nodes[i])
		}
	}
	if log.of(nodes[2].Addr()) != 0 {
		t.Errorf("%v kept its data but was reported recovering", nodes[2])
	}
	// The holder's key is left on one node: its release reports the loss.
	if err := l.Release(ctx); err != nil && !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("the holder's release: %v", err)
	}
}

// A new deployment (every server new) votes at once when every node
// answers, its records become voting, and nobody is reported recovering;
// from then on a node may be down.
func TestFreshDeploymentVotesOnceEveryNodeAnswered(t *testing.T) {
	t.Parallel()
	cl := redistest.StartTWithOptions(t, 3, redistest.Options{Fresh: true})
	log := &recoveringLog{}
	c := newClient(t, nodesOf(cl), recoveringOpts(time.Hour, redlock.WithObserver(log))...)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatalf("first acquisition of a new deployment: %v", err)
	}
	_ = l.Release(ctx)
	for _, n := range cl.Nodes() {
		if v, err := n.Client().Get(ctx, wire.NodeRecordKey).Result(); err != nil || v != "V" {
			t.Fatalf("%v's record after the first acquisition: %q, %v; want voting", n, v, err)
		}
	}
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	l, err = c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatalf("with a node down after the first acquisition: %v", err)
	}
	_ = l.Release(ctx)
	for _, n := range cl.Nodes() {
		if log.of(n.Addr()) != 0 {
			t.Fatalf("%v reported recovering on a new deployment", n)
		}
	}
}

// A new deployment with a node down from the start cannot tell itself from
// a majority that lost its data beside a silent keeper: the first
// acquisition is refused with ErrRecovering, saying for how long.
func TestFreshDeploymentWithANodeDownWaits(t *testing.T) {
	t.Parallel()
	cl := redistest.StartTWithOptions(t, 3, redistest.Options{Fresh: true})
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, nodesOf(cl), recoveringOpts(time.Hour)...)
	_, err := c.TryAcquire(ctxFor(t), uniqueKey(t), 5*time.Second)
	if !errors.Is(err, redlock.ErrRecovering) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("first acquisition with a node down from the start: %v, want ErrRecovering", err)
	}
	if d := sitsOutFor(t, err); d <= 59*time.Minute || d > time.Hour {
		t.Fatalf("sits out for up to %s more, want about the hour", d)
	}
}

// A node restarted empty (a rolling restart) sits out of every key, not
// only those it held, until it has learned the period: with another node
// down, nothing is acquired; a client with recovery off takes it at once.
func TestRestartedNodeSitsOutOfEveryKey(t *testing.T) {
	t.Parallel()
	cl := redistest.StartT(t, 3)
	c := newClient(t, nodesOf(cl), recoveringOpts(time.Hour)...)
	ctx := ctxFor(t)
	nodes := cl.Nodes()
	if err := nodes[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
		if !errors.Is(err, redlock.ErrRecovering) {
			t.Fatalf("a key never used, with the restarted node's yes needed: %v, want ErrRecovering", err)
		}
	}
	off := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(0))
	l, err := off.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatalf("recovery off: %v", err)
	}
	_ = l.Release(ctx)
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

// Inspect says exactly which nodes count now: a node flushed under a held
// lock sits out for the period (it learns from zero), the others count; a
// client with recovery off shows none.
func TestInspectShowsRecoveringNode(t *testing.T) {
	t.Parallel()
	const period = time.Minute
	cl := redistest.StartT(t, 3)
	c := newClient(t, nodesOf(cl), recoveringOpts(period)...)
	ctx, key := ctxFor(t), uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	nodes := cl.Nodes()
	if err := nodes[0].FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if r := info.Nodes[0].Recovering; r <= 59*time.Second || r > period {
		t.Fatalf("the flushed node recovering for %s, want about the period", r)
	}
	for _, n := range info.Nodes[1:] {
		if n.Recovering != 0 {
			t.Fatalf("%s kept its data but shows recovering %s", n.Node, n.Recovering)
		}
	}
	off := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(0))
	info, err = off.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range info.Nodes {
		if n.Recovering != 0 {
			t.Fatalf("recovery off, %s shows recovering %s", n.Node, n.Recovering)
		}
	}
}

// A hold longer than the recovery period (Lock.HoldAtLeast, a tick's
// records) survives a rolling restart: the three nodes restarted empty one
// after the other, each followed by the period. A node that lost its data
// learns the longest hold from the clients and sits out until that much
// has passed (all of them learning is then no new deployment), so no
// competitor gets in before the hold ends, and Inspect says how long it
// still sits out.
func TestHoldLongerThanThePeriodSurvivesARollingRestart(t *testing.T) {
	t.Parallel()
	const period, hold = 3 * time.Second, 15 * time.Second
	cl := redistest.StartT(t, 3)
	holder := newClient(t, nodesOf(cl), recoveringOpts(period)...)
	competitor := newClient(t, nodesOf(cl), recoveringOpts(period)...)
	ctx, key := ctxFor(t), uniqueKey(t)
	start := time.Now()
	l, err := holder.TryAcquire(ctx, key, period)
	if err != nil {
		t.Fatal(err)
	}
	l.HoldAtLeast(hold)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = holder.Close()
	end := start.Add(hold - 500*time.Millisecond) // the drift, and the server's clock read a little later
	try := func(when string) {
		t.Helper()
		l2, err := competitor.TryAcquire(ctx, key, period)
		if err == nil {
			_ = l2.Release(ctx)
			if time.Now().Before(end) {
				t.Fatalf("%s: a competitor acquired %s into a hold of %s", when, time.Since(start).Round(time.Millisecond), hold)
			}
		}
	}
	for i, n := range cl.Nodes() {
		if err := n.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
		for wiped := time.Now(); time.Since(wiped) < period+500*time.Millisecond; time.Sleep(100 * time.Millisecond) {
			try(fmt.Sprintf("node %d restarted empty %s ago", i, time.Since(wiped).Round(time.Millisecond)))
		}
		if !time.Now().Before(end) {
			break // a busy machine outran the hold: the checks above ran while it lasted
		}
		info, err := competitor.Inspect(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if r, left := info.Nodes[0].Recovering, time.Until(start.Add(hold)); r <= 0 || r > hold || (left > time.Second && r < left-time.Second) {
			t.Fatalf("after node %d's restart and the period, node 0 sits out %s more, want about the %s left of the hold", i, r, left)
		}
	}
	for time.Now().Before(end) {
		try("every node restarted")
		time.Sleep(100 * time.Millisecond)
	}
}
