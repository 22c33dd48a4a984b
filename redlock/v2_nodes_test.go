package redlock_test

// Issue 9 on real redis-server nodes: a lock and its counter share a Redis
// Cluster slot (finding 6), evicting nodes are reported or refused (finding
// 7), and one server reached under two names is refused (finding 8).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// v2StartClusterMode starts n independent redis-servers with cluster mode
// enabled, each a one-node cluster that owns all 16384 slots, and waits
// until each reports cluster_state:ok.
func v2StartClusterMode(t *testing.T, n int) *redistest.Cluster {
	t.Helper()
	cl := redistest.StartTWithOptions(t, n, redistest.Options{ExtraArgs: []string{"--cluster-enabled", "yes"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	for _, nd := range cl.Nodes() {
		if err := nd.Client().Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
			t.Fatalf("%v: cluster addslotsrange: %v", nd, err)
		}
	}
	for _, nd := range cl.Nodes() { // the servers settle in parallel
		for {
			info, err := nd.Client().ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%v: cluster state not ok: %v (last: %v, %q)", nd, ctx.Err(), err, info)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return cl
}

// v2ClusterClient is a go-redis ClusterClient on a cluster-mode server.
func v2ClusterClient(t *testing.T, addr string) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{addr},
		DialTimeout:           time.Second,
		ReadTimeout:           v2NodeTimeout,
		WriteTimeout:          v2NodeTimeout,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// TestV2ClusterMode: a *redis.ClusterClient on a real cluster-enabled
// redis-server is one node: acquire, a contender's single attempt, extend,
// a waiter woken by the release, and its larger fence, all without
// CROSSSLOT. On the old design the lock key and its counter hashed to
// different slots and every acquisition failed.
func TestV2ClusterMode(t *testing.T) {
	for _, layout := range []struct {
		name          string
		cluster, flat int
	}{
		{"3-cluster-nodes", 3, 0},
		{"1-cluster-2-plain", 1, 2},
	} {
		t.Run(layout.name, func(t *testing.T) {
			ctx := ctxFor(t)
			cm := v2StartClusterMode(t, layout.cluster)
			var nodes []node.Node
			var ccs []*redis.ClusterClient
			for _, addr := range cm.Addrs() {
				cc := v2ClusterClient(t, addr)
				// This server refuses a script over keys of two slots: the
				// old names ("lock:k", "lock:k:fence") would fail here.
				err := cc.Eval(ctx, "return 1", []string{"lock:k", "lock:k:fence"}).Err()
				if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
					t.Fatalf("cluster node %s accepted a script over two slots (%v): it cannot tell old names from new", addr, err)
				}
				ccs = append(ccs, cc)
				nodes = append(nodes, node.NewRedisNamed("cluster@"+addr, cc))
			}
			if layout.flat > 0 {
				nodes = append(nodes, nodesOf(startCluster(t, layout.flat))...)
			}
			opts := []redlock.Option{redlock.WithNodeTimeout(v2NodeTimeout)}
			c := newClient(t, nodes, opts...)
			other := newClient(t, nodes, opts...)
			key := uniqueKey(t)
			name := c.KeyName(key)

			l1, err := c.Acquire(ctx, key, v2TTL)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if _, err := other.TryAcquire(ctx, key, v2TTL); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("contender's single attempt while held: %v; want ErrNotAcquired", err)
			}
			if err := l1.Extend(ctx, v2TTL); err != nil {
				t.Fatalf("extend: %v", err)
			}

			// On every cluster node: the lock holds our token, and it and its
			// counter are in one slot.
			for i, cc := range ccs {
				if v, err := cc.Get(ctx, name).Result(); err != nil || node.ParseLockValue(v).Token != l1.Token() {
					// Acquire returns at a majority; give a slow node a moment.
					v2WaitFor(t, fmt.Sprintf("cluster node %d holds the token", i), func() bool {
						v, err := cc.Get(ctx, name).Result()
						return err == nil && node.ParseLockValue(v).Token == l1.Token()
					})
				}
				s1, err1 := cc.ClusterKeySlot(ctx, name).Result()
				s2, err2 := cc.ClusterKeySlot(ctx, node.CounterKey(name)).Result()
				if err := errors.Join(err1, err2); err != nil || s1 != s2 {
					t.Fatalf("cluster node %d: %q in slot %d, its counter %q in slot %d (%v)", i, name, s1, node.CounterKey(name), s2, err)
				}
				if f, err := cc.Get(ctx, node.CounterKey(name)).Uint64(); err != nil || f == 0 {
					t.Fatalf("cluster node %d: counter %q = %d, %v; want a count", i, node.CounterKey(name), f, err)
				}
			}

			// A waiter (another client) gets the lock once we release it.
			type result struct {
				l   *redlock.Lock
				err error
			}
			got := make(chan result, 1)
			go func() {
				l, err := other.Acquire(ctx, key, v2TTL)
				got <- result{l, err}
			}()
			time.Sleep(50 * time.Millisecond) // let the waiter find the lock held (not needed for correctness)
			if err := l1.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			var r result
			select {
			case r = <-got:
			case <-ctx.Done():
				t.Fatal("hang guard: the waiter never got the lock")
			}
			if r.err != nil {
				t.Fatalf("waiter: %v", r.err)
			}
			if r.l.Fence() <= l1.Fence() {
				t.Fatalf("second acquisition's fence %d is not above the first's %d", r.l.Fence(), l1.Fence())
			}
			if err := r.l.Extend(ctx, v2TTL); err != nil {
				t.Fatalf("waiter's extend: %v", err)
			}
			if err := r.l.Release(ctx); err != nil {
				t.Fatalf("waiter's release: %v", err)
			}
			t.Logf("fences %d then %d", l1.Fence(), r.l.Fence())
		})
	}
}

// v2WaitFor polls cond every 10 ms until it holds; the limit is a hang guard.
func v2WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// v2LogRecorder is a slog.Handler that keeps every record as one line of text:
// the message, then each attribute as key=value.
type v2LogRecorder struct {
	mu    *sync.Mutex
	recs  *[]v2LogLine
	attrs []slog.Attr
}

type v2LogLine struct {
	level slog.Level
	text  string
}

func newV2LogRecorder() v2LogRecorder {
	return v2LogRecorder{mu: new(sync.Mutex), recs: new([]v2LogLine)}
}

func (h v2LogRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h v2LogRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.recs = append(*h.recs, v2LogLine{r.Level, b.String()})
	return nil
}

func (h v2LogRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return h
}

func (h v2LogRecorder) WithGroup(string) slog.Handler { return h }

// warnings returns the warnings (and worse) whose text contains every one
// of words.
func (h v2LogRecorder) warnings(words ...string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
next:
	for _, l := range *h.recs {
		if l.level < slog.LevelWarn {
			continue
		}
		for _, w := range words {
			if !strings.Contains(l.text, w) {
				continue next
			}
		}
		out = append(out, l.text)
	}
	return out
}

func v2SetPolicy(t *testing.T, n *redistest.Node, policy string) {
	t.Helper()
	if err := n.Client().ConfigSet(context.Background(), "maxmemory-policy", policy).Err(); err != nil {
		t.Fatalf("%v: config set maxmemory-policy %s: %v", n, policy, err)
	}
}

// v2LockCycle acquires key, extends and releases it, and returns the fence.
func v2LockCycle(ctx context.Context, c *redlock.Client, key string) (uint64, error) {
	l, err := c.Acquire(ctx, key, v2TTL)
	if err != nil {
		return 0, fmt.Errorf("acquire %q: %w", key, err)
	}
	if err := l.Extend(ctx, v2TTL); err != nil {
		return 0, fmt.Errorf("extend %q: %w", key, err)
	}
	if err := l.Release(ctx); err != nil {
		return 0, fmt.Errorf("release %q: %w", key, err)
	}
	return l.Fence(), nil
}

// v2DBSizes is the key count of every node.
func v2DBSizes(t *testing.T, clients ...redis.Cmdable) []int64 {
	t.Helper()
	out := make([]int64, len(clients))
	for i, c := range clients {
		n, err := c.DBSize(context.Background()).Result()
		if err != nil {
			t.Fatalf("dbsize of node %d: %v", i, err)
		}
		out[i] = n
	}
	return out
}

func v2Cmdables(cl *redistest.Cluster) []redis.Cmdable {
	var out []redis.Cmdable
	for _, c := range cl.Clients() {
		out = append(out, c)
	}
	return out
}

// TestV2EvictionWarnedOnce: a node whose maxmemory-policy can evict lock keys
// is logged as a warning exactly once, naming the node and the policy,
// across many operations (the first ones concurrent), and the operations
// still work. On the old design nothing was logged.
func TestV2EvictionWarnedOnce(t *testing.T) {
	cl := startCluster(t, 3)
	evicting := cl.Nodes()[0]
	v2SetPolicy(t, evicting, "allkeys-lru")
	rec := newV2LogRecorder()
	c := newClient(t, nodesOf(cl), redlock.WithLogger(slog.New(rec)), redlock.WithNodeTimeout(v2NodeTimeout))
	ctx := ctxFor(t)

	// First contact from several goroutines at once, then more operations.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() {
			for i := range 3 {
				if _, err := v2LockCycle(ctx, c, fmt.Sprintf("%s-%d-%d", t.Name(), g, i)); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("operations on a cluster with an evicting node: %v", err)
	}
	key := uniqueKey(t)
	var prev uint64
	for range 3 {
		f, err := v2LockCycle(ctx, c, key)
		if err != nil {
			t.Fatal(err)
		}
		if f <= prev {
			t.Fatalf("fence %d not above %d", f, prev)
		}
		prev = f
	}
	if ran, err := c.TryDo(ctx, key, v2TTL, func(context.Context) error { return nil }); !ran || err != nil {
		t.Fatalf("TryDo: ran %v, %v", ran, err)
	}

	if w := rec.warnings(evicting.Addr(), "allkeys-lru"); len(w) != 1 {
		t.Fatalf("%d warnings name node %s and its policy allkeys-lru, want exactly 1: %q", len(w), evicting.Addr(), w)
	} else {
		t.Logf("warning: %s", w[0])
	}
	for _, n := range cl.Nodes()[1:] {
		if w := rec.warnings(n.Addr(), "maxmemory"); len(w) != 0 {
			t.Fatalf("node %s (noeviction) was warned about: %q", n.Addr(), w)
		}
	}
}

// TestV2EvictionRefused: with WithRequireNoEviction the first operation on a
// cluster with an evicting node fails with ErrInvalidArgument naming the
// policy, and so does the next; no key is created. With every node on
// noeviction the same option works.
func TestV2EvictionRefused(t *testing.T) {
	cl := startCluster(t, 3)
	evicting := cl.Nodes()[1]
	v2SetPolicy(t, evicting, "allkeys-lru")
	ctx := ctxFor(t)
	c := newClient(t, nodesOf(cl), redlock.WithRequireNoEviction(), redlock.WithNodeTimeout(v2NodeTimeout))
	key := uniqueKey(t)

	_, err := c.Acquire(ctx, key, v2TTL)
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("first operation with an allkeys-lru node and WithRequireNoEviction: %v; want ErrInvalidArgument", err)
	}
	for _, want := range []string{"allkeys-lru", evicting.Addr()} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}
	t.Logf("refused: %v", err)
	if _, err := c.TryAcquire(ctx, uniqueKey(t), v2TTL); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("second operation: %v; want ErrInvalidArgument again", err)
	}
	if n := v2DBSizes(t, v2Cmdables(cl)...); n[0]+n[1]+n[2] != 0 {
		t.Fatalf("refused operations left keys on the nodes: dbsize %v:%s", n, v2DumpKeys(ctx, cl))
	}

	v2SetPolicy(t, evicting, "noeviction")
	strict := newClient(t, nodesOf(cl), redlock.WithRequireNoEviction(), redlock.WithNodeTimeout(v2NodeTimeout))
	if _, err := v2LockCycle(ctx, strict, key); err != nil {
		t.Fatalf("WithRequireNoEviction on noeviction nodes: %v", err)
	}
}

// TestV2SameServerTwoNames: "127.0.0.1:P" and "localhost:P" are one server;
// with a third server they would make a majority of one. Once both names
// have answered, every operation fails with ErrInvalidArgument naming both.
// On the old design they were two votes. Three distinct servers work.
func TestV2SameServerTwoNames(t *testing.T) {
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	port := cl.Nodes()[0].Addr()[strings.LastIndex(cl.Nodes()[0].Addr(), ":")+1:]
	byIP := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, ContextTimeoutEnabled: true})
	byName := redis.NewClient(&redis.Options{Addr: "localhost:" + port, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = byIP.Close(); _ = byName.Close() })
	if err := byName.Ping(ctx).Err(); err != nil {
		t.Fatalf("localhost:%s does not answer: %v", port, err)
	}
	nodes := []node.Node{node.NewRedis(byIP), node.NewRedis(byName), node.NewRedis(cl.Nodes()[1].Client())}
	c := newClient(t, nodes, redlock.WithNodeTimeout(v2NodeTimeout))

	// First contact stops waiting once a quorum said who they are, so on a
	// busy machine the second name may answer later: the duplicate is
	// refused from the moment both names have answered (an answer counts
	// only from a node identified as a distinct server).
	var err error
	for try := 0; ; try++ {
		var l *redlock.Lock
		l, err = c.TryAcquire(ctx, uniqueKey(t), v2TTL)
		if errors.Is(err, redlock.ErrInvalidArgument) {
			break
		}
		if try == 50 {
			t.Fatalf("one server under two names never refused (last: %v)", err)
		}
		if l != nil {
			_ = l.Release(ctx)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}
	t.Logf("refused: %v", err)
	if _, err := c.Acquire(ctx, uniqueKey(t), v2TTL); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("second operation: %v; want ErrInvalidArgument again", err)
	}
	distinct := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(v2NodeTimeout))
	key := uniqueKey(t)
	l, err := distinct.Acquire(ctx, key, v2TTL)
	if err != nil {
		t.Fatalf("three distinct servers: %v", err)
	}
	settled(t, cl, distinct.KeyName(key), l.Token()) // one key on each server
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestV2EvictionWarnedWhenIdentifiedLate: an evicting node that does not
// answer at first contact (paused) is warned about once it answers, once,
// while operations go on.
func TestV2EvictionWarnedWhenIdentifiedLate(t *testing.T) {
	cl := startCluster(t, 3)
	evicting := cl.Nodes()[2]
	v2SetPolicy(t, evicting, "volatile-lru") // evicts keys with a TTL: lock keys
	rec := newV2LogRecorder()
	c := newClient(t, nodesOf(cl), redlock.WithLogger(slog.New(rec)), redlock.WithNodeTimeout(v2NodeTimeout))
	ctx := ctxFor(t)
	if err := evicting.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = evicting.Resume()
		}
	})
	key := uniqueKey(t)
	if ran, err := c.TryDo(ctx, key, v2TTL, func(context.Context) error { return nil }); !ran || err != nil {
		t.Fatalf("TryDo with one node paused: ran %v, %v", ran, err)
	}
	if w := rec.warnings(evicting.Addr(), "volatile-lru"); len(w) != 0 {
		t.Fatalf("warned about a node that never answered: %q", w)
	}
	if err := evicting.Resume(); err != nil {
		t.Fatal(err)
	}
	paused = false
	v2WaitFor(t, "a warning about the evicting node once it answers", func() bool {
		if ran, err := c.TryDo(ctx, key, v2TTL, func(context.Context) error { return nil }); !ran || err != nil {
			t.Fatalf("TryDo: ran %v, %v", ran, err)
		}
		return len(rec.warnings(evicting.Addr(), "volatile-lru")) > 0
	})
	for range 5 {
		if _, err := v2LockCycle(ctx, c, key); err != nil {
			t.Fatal(err)
		}
	}
	if w := rec.warnings(evicting.Addr(), "volatile-lru"); len(w) != 1 {
		t.Fatalf("%d warnings name node %s and its policy volatile-lru, want exactly 1: %q", len(w), evicting.Addr(), w)
	}
}

// unnamedNode does not say which server it is while hide is set, as a node
// that cannot be reached at first contact.
type unnamedNode struct {
	node.Node
	hide *atomic.Bool
}

func (n unnamedNode) Identify(ctx context.Context) (node.Identity, error) {
	if n.hide.Load() {
		return node.Identity{}, errors.New("test: not answering yet")
	}
	return n.Node.Identify(ctx)
}

// TestV2SameServerTwoNamesIdentifiedLate: while "localhost:P" has not said
// which server it is, its votes do not count, so it and "127.0.0.1:P" (one
// server) never make a majority of 3 on their own; once it says, every
// operation fails with ErrInvalidArgument.
func TestV2SameServerTwoNamesIdentifiedLate(t *testing.T) {
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	addr := cl.Nodes()[0].Addr()
	port := addr[strings.LastIndex(addr, ":")+1:]
	byName := redis.NewClient(&redis.Options{Addr: "localhost:" + port, ContextTimeoutEnabled: true, ReadTimeout: v2NodeTimeout})
	t.Cleanup(func() { _ = byName.Close() })
	hide := new(atomic.Bool)
	hide.Store(true)
	third := cl.Nodes()[1]
	nodes := []node.Node{
		node.NewRedis(cl.Nodes()[0].Client()),
		unnamedNode{node.NewRedis(byName), hide},
		node.NewRedis(third.Client()),
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(v2NodeTimeout))
	// Only the one server under two names is left. (Paused rather than
	// killed: go-redis keeps redialling a dead server in a goroutine that
	// outlives the test by up to a second, which goleak would report.)
	if err := third.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = third.Resume() }) // before the clients close
	for i := range 3 {
		l, err := c.TryAcquire(ctx, uniqueKey(t), v2TTL)
		if err == nil {
			_ = l.Release(ctx)
			t.Fatalf("attempt %d: acquired with one server under two names and the third server down", i)
		}
		t.Logf("attempt %d: %v", i, err)
	}
	hide.Store(false)
	v2WaitFor(t, "ErrInvalidArgument once localhost:"+port+" says which server it is", func() bool {
		l, err := c.TryAcquire(ctx, uniqueKey(t), v2TTL)
		if err == nil {
			_ = l.Release(ctx)
			t.Fatal("acquired with one server under two names and the third server down")
		}
		return errors.Is(err, redlock.ErrInvalidArgument)
	})
	_, err := c.TryAcquire(ctx, uniqueKey(t), v2TTL)
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "localhost:"+port) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("after identification: %v; want ErrInvalidArgument naming both names", err)
	}
	t.Logf("refused: %v", err)
}
