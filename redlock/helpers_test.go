package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/redis/go-redis/v9"
)

// nodesOf wraps each real redis-server of the cluster in a RedisNode.
func nodesOf(c *redistest.Cluster) []node.Node {
	var nodes []node.Node
	for _, rc := range c.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	return nodes
}

func newClient(t *testing.T, nodes []node.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // release subscriptions, for goleak
	return c
}

// testNodeTimeout is the node timeout of clients on real nodes unless a
// test sets its own: long enough for a loaded 2-core machine (a timeout
// derived from a short TTL, 100ms for 1s, failed there), so the tests'
// TTLs are a few seconds.
const testNodeTimeout = 2 * time.Second

// start starts n real redis-server nodes and a client on them, with
// testNodeTimeout unless opts set another.
func start(t *testing.T, n int, opts ...redlock.Option) (*redistest.Cluster, *redlock.Client) {
	t.Helper()
	cl := redistest.StartT(t, n)
	return cl, newClient(t, nodesOf(cl), append([]redlock.Option{redlock.WithNodeTimeout(testNodeTimeout)}, opts...)...)
}

var keySeq atomic.Int64

func uniqueKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), keySeq.Add(1))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// holders reads the token that holds a lock key on every node ("" when
// free, its hold over by the node's clock, or the node down).
func holders(t *testing.T, c *redistest.Cluster, name string) []string {
	t.Helper()
	out := make([]string, 0, len(c.Nodes()))
	for _, n := range c.Nodes() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		v, err := n.Client().Get(ctx, name).Result()
		now, terr := n.Client().Time(ctx).Result()
		cancel()
		if err != nil && !errors.Is(err, redis.Nil) || terr != nil {
			v = ""
		}
		h, _, until, ok := wire.ParseRecord(v)
		switch {
		case !ok:
			h = wire.ParseLockValue(v) // an older client's value, or none
		case until <= now.UnixMilli():
			h.Token = ""
		}
		out = append(out, h.Token)
	}
	return out
}

// countOf reads the counter a node keeps for the lock key name, in the
// key's record (0 when there is none).
func countOf(ctx context.Context, rc *redis.Client, name string) uint64 {
	v, _ := rc.Get(ctx, name).Result()
	_, count, _, _ := wire.ParseRecord(v)
	return count
}

// setCount sets the counter a node keeps for the lock key name, in the
// key's record, leaving its holder as it is.
func setCount(t *testing.T, ctx context.Context, rc *redis.Client, name string, n uint64) {
	t.Helper()
	v, err := rc.Get(ctx, name).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	rec := strconv.FormatUint(n, 10)
	if _, rest, held := strings.Cut(v, " "); held {
		rec += " " + rest
	}
	if err := rc.Set(ctx, name, rec, redis.KeepTTL).Err(); err != nil {
		t.Fatal(err)
	}
}

func countEqual(vals []string, want string) int {
	n := 0
	for _, v := range vals {
		if v == want {
			n++
		}
	}
	return n
}

// setOn makes "someone else" hold name on the given nodes, bypassing the
// client, the way a competing holder would.
func setOn(t *testing.T, c *redistest.Cluster, name, token string, ttl time.Duration, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		if err := c.Nodes()[i].Client().Set(context.Background(), name, token, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// slowNode answers like the node it wraps, but only after delay, whatever
// the context says: a node behind a stalled network or a paused process
// whose reply still arrives.
type slowNode struct {
	Node
	delay time.Duration
}

func (s slowNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := s.Node.Acquire(context.WithoutCancel(ctx), a)
	time.Sleep(s.delay)
	return r, err
}

// hangingNode performs the real acquire, then does not answer until the
// context ends: the write landed but the reply is lost.
type hangingNode struct{ node.Node }

func (h hangingNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	if _, err := h.Node.Acquire(context.WithoutCancel(ctx), a); err != nil {
		return node.AcquireReply{}, err
	}
	<-ctx.Done()
	return node.AcquireReply{}, ctx.Err()
}

func startCluster(t *testing.T, n int) *redistest.Cluster { return redistest.StartT(t, n) }

// settled waits until every node holds token: Acquire returns at a majority,
// and the slower nodes' writes (or go-redis's resends of them) may still be
// on their way. Tests that restart a node must not race with them.
func settled(t *testing.T, c *redistest.Cluster, name, token string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard
	for countEqual(holders(t, c, name), token) != len(c.Nodes()) {
		if time.Now().After(deadline) {
			t.Fatalf("nodes never all held the lock: %v", holders(t, c, name))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventuallyFree waits for name to be gone from every node (up to a minute,
// a hang guard) and returns what the nodes hold then.
func eventuallyFree(t *testing.T, c *redistest.Cluster, name string) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		h := holders(t, c, name)
		if countEqual(h, "") == len(h) || time.Now().After(deadline) {
			return h
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startSlow starts 3 real nodes whose answers all come delay late.
func startSlow(t *testing.T, delay time.Duration, opts ...redlock.Option) (*redistest.Cluster, *redlock.Client) {
	t.Helper()
	cl := startCluster(t, 3)
	var nodes []node.Node
	for _, n := range nodesOf(cl) {
		nodes = append(nodes, slowNode{Node: n.(Node), delay: delay})
	}
	return cl, newClient(t, nodes, opts...)
}

// Node is a node with every optional capability: the tests' wrappers embed
// it, so that they forward the capabilities of the node they wrap.
type Node interface {
	node.Node
	node.Inspector
	node.ForceReleaser
	node.Subscriber
}

// bareNode has only the calls every lock needs: none of the optional
// capabilities of package node.
type bareNode struct{ node.Node }

// rawValues reads a key's value on every node as stored ("" when absent).
func rawValues(t *testing.T, cl *redistest.Cluster, name string) []string {
	t.Helper()
	var out []string
	for _, n := range cl.Nodes() {
		v, err := n.Client().Get(context.Background(), name).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("get %s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}

// hangGuard bounds the contention tests: far above a loaded machine's run
// under -race, far below go test's -timeout.
const hangGuard = 8 * time.Minute

// Owner identity, Inspect, ForceRelease and TookOver on real redis-server
// nodes.

// patient waits for a lock held by others up to a minute: verdicts must not
// depend on the machine's speed.
var patient = redlock.WithRetry(retry.Constant(600, 100*time.Millisecond, 20*time.Millisecond))

func redisClient(addr string) *redis.Client { return redis.NewClient(&redis.Options{Addr: addr}) }

// tookOverFence checks TookOver's fence: at least the previous holder's
// (a node that answered its acquisition late may have counted higher) and
// below ours.
func tookOverFence(got, previous, ours uint64) bool { return got >= previous && got < ours }

// longTTL is the TTL of locks whose TTL does not matter to the test: long
// enough that a slow, busy machine never lets one expire by accident.
const longTTL = 10 * time.Second

// slowNodeTimeout is generous for the same reason.
const slowNodeTimeout = 2 * time.Second

// dumpKeys lists every key of every node with its PTTL, for failure messages.
func dumpKeys(ctx context.Context, cl *redistest.Cluster) string {
	var b strings.Builder
	for i, n := range cl.Nodes() {
		keys, err := n.Client().Keys(ctx, "*").Result()
		if err != nil {
			fmt.Fprintf(&b, "\n  node %d: %v", i, err)
			continue
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "\n  node %d: %d keys", i, len(keys))
		for k, key := range keys {
			if k == 10 {
				fmt.Fprintf(&b, "\n    ... and %d more", len(keys)-k)
				break
			}
			pttl, _ := n.Client().PTTL(ctx, key).Result()
			fmt.Fprintf(&b, "\n    %s (pttl %v)", key, pttl)
		}
	}
	return b.String()
}

// lateAnswerNode performs an acquire at once but holds its answer until gate
// closes (or the request's context ends): a node whose grant arrives after
// the acquisition was decided without it.
type lateAnswerNode struct {
	Node
	gate chan struct{}
}

func (g lateAnswerNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	r, err := g.Node.Acquire(context.WithoutCancel(ctx), a)
	select {
	case <-g.gate:
		return r, err
	case <-ctx.Done():
		return node.AcquireReply{}, ctx.Err()
	}
}

// waitUntil polls cond every 10 ms until it holds; the limit is a hang guard.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// await polls cond until it holds or the deadline passes.
func await(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recorder keeps every event it observes.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

func (r *recorder) Observe(e observe.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// of returns the events of key (all keys when key is "") of kind, with reason
// when reason is not "*".
func (r *recorder) of(key string, kind observe.Kind, reason string) []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []observe.Event
	for _, e := range r.events {
		if (key == "" || e.Key == key) && e.Kind == kind && (reason == "*" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) count(key string, kind observe.Kind, reason string) int {
	return len(r.of(key, kind, reason))
}

// balanced checks the invariants Event documents for key: calls ended once,
// locks ended once, auto-extension stopped once per start.
func (r *recorder) balanced(t *testing.T, key string, calls int) {
	t.Helper()
	acq, notAcq := r.count(key, observe.Acquired, "*"), r.count(key, observe.NotAcquired, "*")
	first := 0
	for _, e := range r.of(key, observe.Attempt, "*") {
		if e.Attempts == 1 {
			first++
		}
	}
	if first != calls {
		t.Errorf("%s: %d first attempts, want %d calls", key, first, calls)
	}
	if acq+notAcq != calls {
		t.Errorf("%s: %d acquired + %d not acquired, want %d calls", key, acq, notAcq, calls)
	}
	if ended := r.count(key, observe.Released, "*") + r.count(key, observe.Lost, "*"); ended != acq {
		t.Errorf("%s: %d locks ended (released or lost), want %d acquired", key, ended, acq)
	}
	if start, stop := r.count(key, observe.Kept, "start"), r.count(key, observe.Kept, "stop"); start != stop {
		t.Errorf("%s: kept start %d, stop %d", key, start, stop)
	}
}

func lockName(key string) string { return defaults.KeyPrefix + "{" + key + "}" }

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// votingMem returns a memory node that votes, as a node of a deployment
// that ran before the test (a new one learns until every node answered a
// round: see recovery).
func votingMem(name string) *memnode.Node {
	m := memnode.New(name)
	promoteMem(m)
	return m
}

// promoteMem makes memory nodes vote.
func promoteMem(ms ...*memnode.Node) {
	for _, m := range ms {
		s, _ := m.Learn(context.Background(), node.LearnArgs{Name: "x", Recovery: time.Hour})
		_, _ = m.Learn(context.Background(), node.LearnArgs{Name: "x", Recovery: time.Hour, Promote: s.ID})
	}
}

// expireHold ends the hold recorded in a node's record of the lock key
// name, as its expiry would: the record keeps the holder, as the trail.
func expireHold(t *testing.T, ctx context.Context, rc *redis.Client, name string) {
	t.Helper()
	v, err := rc.Get(ctx, name).Result()
	if err != nil {
		return // no record: nothing held
	}
	f := strings.SplitN(v, " ", 4) // count fence until rest
	if len(f) < 4 {
		return
	}
	f[2] = "1" // the server's ms: long past
	if err := rc.Set(ctx, name, strings.Join(f, " "), redis.KeepTTL).Err(); err != nil {
		t.Fatal(err)
	}
}

// holdLeft reads how long a node's record of the lock key name still
// holds, by the node's clock (0 when free or over).
func holdLeft(ctx context.Context, rc *redis.Client, name string) time.Duration {
	v, err := rc.Get(ctx, name).Result()
	now, terr := rc.Time(ctx).Result()
	if err != nil || terr != nil {
		return 0
	}
	h, _, until, ok := wire.ParseRecord(v)
	if !ok || h.Token == "" {
		return 0
	}
	return max(time.Duration(until-now.UnixMilli())*time.Millisecond, 0)
}
