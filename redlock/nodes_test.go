package redlock_test

// What the client learns when it identifies real redis-server nodes:
// evicting nodes are reported or refused, and one server reached under two
// names is refused.

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
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// lineRecorder is a slog.Handler that keeps every record as one line of text:
// the message, then each attribute as key=value.
type lineRecorder struct {
	mu    *sync.Mutex
	recs  *[]recordedLine
	attrs []slog.Attr
}

type recordedLine struct {
	level slog.Level
	text  string
}

func newLineRecorder() lineRecorder {
	return lineRecorder{mu: new(sync.Mutex), recs: new([]recordedLine)}
}

func (h lineRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h lineRecorder) Handle(_ context.Context, r slog.Record) error {
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
	*h.recs = append(*h.recs, recordedLine{r.Level, b.String()})
	return nil
}

func (h lineRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return h
}

func (h lineRecorder) WithGroup(string) slog.Handler { return h }

// warnings returns the warnings (and worse) whose text contains every one
// of words.
func (h lineRecorder) warnings(words ...string) []string {
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

func setEvictionPolicy(t *testing.T, n *redistest.Node, policy string) {
	t.Helper()
	if err := n.Client().ConfigSet(context.Background(), "maxmemory-policy", policy).Err(); err != nil {
		t.Fatalf("%v: config set maxmemory-policy %s: %v", n, policy, err)
	}
}

// lockCycle acquires key, extends and releases it, and returns the fence.
func lockCycle(ctx context.Context, c *redlock.Client, key string) (uint64, error) {
	l, err := c.Acquire(ctx, key, longTTL)
	if err != nil {
		return 0, fmt.Errorf("acquire %q: %w", key, err)
	}
	if err := l.Extend(ctx, longTTL); err != nil {
		return 0, fmt.Errorf("extend %q: %w", key, err)
	}
	if err := l.Release(ctx); err != nil {
		return 0, fmt.Errorf("release %q: %w", key, err)
	}
	return l.Fence(), nil
}

// lockKeys counts the lock keys (not counters, trails or tombstones) on
// the nodes.
func lockKeys(t *testing.T, cl *redistest.Cluster) int {
	t.Helper()
	n := 0
	for _, c := range cl.Clients() {
		keys, err := c.Keys(context.Background(), "lock:*}").Result()
		if err != nil {
			t.Fatal(err)
		}
		n += len(keys)
	}
	return n
}

// TestEvictionWarnedOnce: a node whose maxmemory-policy can evict lock keys
// is logged as a warning exactly once, naming the node and the policy,
// across many operations (the first ones concurrent), and the operations
// still work. On the old design nothing was logged.
func TestEvictionWarnedOnce(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	evicting := cl.Nodes()[0]
	setEvictionPolicy(t, evicting, "allkeys-lru")
	rec := newLineRecorder()
	c := newClient(t, nodesOf(cl), redlock.WithLogger(slog.New(rec)), redlock.WithNodeTimeout(slowNodeTimeout))
	ctx := ctxFor(t)

	// First contact from several goroutines at once, then more operations.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() {
			for i := range 3 {
				if _, err := lockCycle(ctx, c, fmt.Sprintf("%s-%d-%d", t.Name(), g, i)); err != nil {
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
		f, err := lockCycle(ctx, c, key)
		if err != nil {
			t.Fatal(err)
		}
		if f <= prev {
			t.Fatalf("fence %d not above %d", f, prev)
		}
		prev = f
	}
	if ran, err := c.TryDo(ctx, key, longTTL, func(context.Context) error { return nil }); !ran || err != nil {
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

// TestEvictionRefused: with WithRequireNoEviction the first operation on a
// cluster with an evicting node fails with ErrInvalidArgument naming the
// policy, and so does the next; no key is created. With every node on
// noeviction the same option works.
func TestEvictionRefused(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	evicting := cl.Nodes()[1]
	setEvictionPolicy(t, evicting, "allkeys-lru")
	ctx := ctxFor(t)
	c := newClient(t, nodesOf(cl), redlock.WithRequireNoEviction(), redlock.WithNodeTimeout(slowNodeTimeout))
	key := uniqueKey(t)

	_, err := c.Acquire(ctx, key, longTTL)
	if !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("first operation with an allkeys-lru node and WithRequireNoEviction: %v; want ErrInvalidArgument", err)
	}
	for _, want := range []string{"allkeys-lru", evicting.Addr()} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}
	t.Logf("refused: %v", err)
	if _, err := c.TryAcquire(ctx, uniqueKey(t), longTTL); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("second operation: %v; want ErrInvalidArgument again", err)
	}
	_ = c.Close() // the undo of an attempt sent before the refusal has landed
	if n := lockKeys(t, cl); n != 0 {
		t.Fatalf("refused operations left %d lock keys on the nodes:%s", n, dumpKeys(ctx, cl))
	}

	setEvictionPolicy(t, evicting, "noeviction")
	strict := newClient(t, nodesOf(cl), redlock.WithRequireNoEviction(), redlock.WithNodeTimeout(slowNodeTimeout))
	if _, err := lockCycle(ctx, strict, key); err != nil {
		t.Fatalf("WithRequireNoEviction on noeviction nodes: %v", err)
	}
}

// TestSameServerTwoNames: "127.0.0.1:P" and "localhost:P" are one server;
// with a third server they would make a majority of one. Once both names
// have answered, every operation fails with ErrInvalidArgument naming both.
// On the old design they were two votes. Three distinct servers work.
func TestSameServerTwoNames(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	port := cl.Nodes()[0].Addr()[strings.LastIndex(cl.Nodes()[0].Addr(), ":")+1:]
	byIP := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, ContextTimeoutEnabled: true})
	byName := redis.NewClient(&redis.Options{Addr: "localhost:" + port, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = byIP.Close(); _ = byName.Close() })
	if err := byName.Ping(ctx).Err(); err != nil {
		t.Fatalf("localhost:%s does not answer: %v", port, err)
	}
	nodes := []node.Node{redisnode.New(byIP), redisnode.New(byName), redisnode.New(cl.Nodes()[1].Client())}
	c := newClient(t, nodes, redlock.WithNodeTimeout(slowNodeTimeout))

	// First contact stops waiting once a quorum said who they are, so on a
	// busy machine the second name may answer later: the duplicate is
	// refused from the moment both names have answered (an answer counts
	// only from a node identified as a distinct server).
	var err error
	for try := 0; ; try++ {
		var l *redlock.Lock
		l, err = c.TryAcquire(ctx, uniqueKey(t), longTTL)
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
	if _, err := c.Acquire(ctx, uniqueKey(t), longTTL); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("second operation: %v; want ErrInvalidArgument again", err)
	}
	distinct := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(slowNodeTimeout))
	key := uniqueKey(t)
	l, err := distinct.Acquire(ctx, key, longTTL)
	if err != nil {
		t.Fatalf("three distinct servers: %v", err)
	}
	settled(t, cl, distinct.KeyName(key), l.Token()) // one key on each server
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEvictionWarnedWhenIdentifiedLate: an evicting node that does not
// answer at first contact (paused) is warned about once it answers, once,
// while operations go on.
func TestEvictionWarnedWhenIdentifiedLate(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	evicting := cl.Nodes()[2]
	setEvictionPolicy(t, evicting, "volatile-lru") // evicts keys with a TTL: lock keys
	rec := newLineRecorder()
	c := newClient(t, nodesOf(cl), redlock.WithLogger(slog.New(rec)), redlock.WithNodeTimeout(slowNodeTimeout))
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
	if ran, err := c.TryDo(ctx, key, longTTL, func(context.Context) error { return nil }); !ran || err != nil {
		t.Fatalf("TryDo with one node paused: ran %v, %v", ran, err)
	}
	if w := rec.warnings(evicting.Addr(), "volatile-lru"); len(w) != 0 {
		t.Fatalf("warned about a node that never answered: %q", w)
	}
	if err := evicting.Resume(); err != nil {
		t.Fatal(err)
	}
	paused = false
	waitUntil(t, "a warning about the evicting node once it answers", func() bool {
		if ran, err := c.TryDo(ctx, key, longTTL, func(context.Context) error { return nil }); !ran || err != nil {
			t.Fatalf("TryDo: ran %v, %v", ran, err)
		}
		return len(rec.warnings(evicting.Addr(), "volatile-lru")) > 0
	})
	for range 5 {
		if _, err := lockCycle(ctx, c, key); err != nil {
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
	Node
	hide *atomic.Bool
}

func (n unnamedNode) Identify(ctx context.Context) (node.Identity, error) {
	if n.hide.Load() {
		return node.Identity{}, errors.New("test: not answering yet")
	}
	return n.Node.Identify(ctx)
}

// TestSameServerTwoNamesIdentifiedLate: while "localhost:P" has not said
// which server it is, its votes do not count, so it and "127.0.0.1:P" (one
// server) never make a majority of 3 on their own; once it says, every
// operation fails with ErrInvalidArgument.
func TestSameServerTwoNamesIdentifiedLate(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx := ctxFor(t)
	addr := cl.Nodes()[0].Addr()
	port := addr[strings.LastIndex(addr, ":")+1:]
	byName := redis.NewClient(&redis.Options{Addr: "localhost:" + port, ContextTimeoutEnabled: true, ReadTimeout: slowNodeTimeout})
	t.Cleanup(func() { _ = byName.Close() })
	hide := new(atomic.Bool)
	hide.Store(true)
	third := cl.Nodes()[1]
	nodes := []node.Node{
		redisnode.New(cl.Nodes()[0].Client()),
		unnamedNode{redisnode.New(byName), hide},
		redisnode.New(third.Client()),
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(slowNodeTimeout))
	// Only the one server under two names is left. (Paused rather than
	// killed: go-redis keeps redialling a dead server in a goroutine that
	// outlives the test by up to a second, which goleak would report.)
	if err := third.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = third.Resume() }) // before the clients close
	for i := range 3 {
		l, err := c.TryAcquire(ctx, uniqueKey(t), longTTL)
		if err == nil {
			_ = l.Release(ctx)
			t.Fatalf("attempt %d: acquired with one server under two names and the third server down", i)
		}
		t.Logf("attempt %d: %v", i, err)
	}
	hide.Store(false)
	waitUntil(t, "ErrInvalidArgument once localhost:"+port+" says which server it is", func() bool {
		l, err := c.TryAcquire(ctx, uniqueKey(t), longTTL)
		if err == nil {
			_ = l.Release(ctx)
			t.Fatal("acquired with one server under two names and the third server down")
		}
		return errors.Is(err, redlock.ErrInvalidArgument)
	})
	_, err := c.TryAcquire(ctx, uniqueKey(t), longTTL)
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "localhost:"+port) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("after identification: %v; want ErrInvalidArgument naming both names", err)
	}
	t.Logf("refused: %v", err)
}
