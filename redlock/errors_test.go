package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

// nodeErrors collects the per-node errors a client reports to its observer.
type nodeErrors struct {
	mu   sync.Mutex
	errs map[string][]error // by node name
}

func (n *nodeErrors) Observe(e observe.Event) {
	if e.Kind != observe.Node || e.Err == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.errs[e.Node] = append(n.errs[e.Node], e.Err)
}

func (n *nodeErrors) of(name string) []error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.errs[name]
}

// syncBuffer is a log destination safe for the client's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lyingNodes starts n fake servers that answer lock commands with f, and
// returns go-redis nodes on them.
func lyingNodes(t *testing.T, n int, f fakeresp.Fault) []node.Node {
	t.Helper()
	var nodes []node.Node
	for i := range n {
		s, err := fakeresp.Start(fakeresp.Lying(f.Name+string(rune('a'+i)), f))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		rc := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = rc.Close() })
		nodes = append(nodes, redisnode.New(rc))
	}
	return nodes
}

// Three real nodes and two that lie, in every way a node can: each call
// still acquires and releases on the majority, each liar's failure is
// reported as its own node's error (ErrNodePanic where go-redis panicked
// decoding the reply, with the stack in the log), and the process lives.
func TestLyingNodesAreOnlyTheirOwnFailure(t *testing.T) {
	t.Parallel()
	real := startCluster(t, 3)
	for _, f := range fakeresp.Faults {
		t.Run(f.Name, func(t *testing.T) {
			liars := lyingNodes(t, 2, f)
			seen := &nodeErrors{errs: map[string][]error{}}
			var log syncBuffer
			c, err := redlock.New(append(nodesOf(real), liars...),
				redlock.WithNodeTimeout(testNodeTimeout),
				redlock.WithObserver(seen),
				redlock.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxFor(t)
			for range 3 {
				l, err := c.Acquire(ctx, uniqueKey(t), 10*time.Second)
				if err != nil {
					t.Fatalf("acquire: %v", err)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("release: %v", err)
				}
			}
			if err := c.Close(); err != nil { // waits for the liars' answers
				t.Fatal(err)
			}
			for _, liar := range liars {
				checkLiarErrors(t, f, seen.of(liar.Name()))
			}
			if f.Panics && !strings.Contains(log.String(), "panic recovered") {
				t.Errorf("no panic logged:\n%s", log.String())
			}
		})
	}
}

func checkLiarErrors(t *testing.T, f fakeresp.Fault, errs []error) {
	t.Helper()
	if len(errs) == 0 {
		t.Errorf("no node error reported for a node that answers %q", f.Name)
		return
	}
	panics := 0
	for _, err := range errs {
		if errors.Is(err, redlock.ErrNodePanic) {
			panics++
		}
	}
	if f.Panics && panics == 0 {
		t.Errorf("no ErrNodePanic among %v", errs)
	}
	if !f.Panics && panics > 0 {
		t.Errorf("%d of %d errors are panics, want clean errors: %v", panics, len(errs), errs)
	}
}

// One real node and two that announce a petabyte-long reply: no majority,
// so the call fails with ErrQuorumUnreachable, in which each liar's
// failure is a *NodeError that wraps ErrNodePanic.
func TestLyingMajorityFailsWithNodePanicErrors(t *testing.T) {
	t.Parallel()
	real := startCluster(t, 1)
	huge := fakeresp.Fault{Name: "huge-array", Reply: []byte("*1000000000000000\r\n")}
	liars := lyingNodes(t, 2, huge)
	c := newClient(t, append(nodesOf(real), liars...), redlock.WithNodeTimeout(testNodeTimeout))
	_, err := c.TryAcquire(ctxFor(t), uniqueKey(t), 10*time.Second)
	if !errors.Is(err, redlock.ErrQuorumUnreachable) || !errors.Is(err, redlock.ErrNodePanic) {
		t.Fatalf("err = %v, want ErrQuorumUnreachable with ErrNodePanic", err)
	}
	named := map[string]bool{}
	walkErrors(err, func(e error) {
		if ne, ok := e.(*redlock.NodeError); ok && errors.Is(ne, redlock.ErrNodePanic) {
			named[ne.Node] = true
		}
	})
	for _, liar := range liars {
		if !named[liar.Name()] {
			t.Errorf("no *NodeError wrapping ErrNodePanic for %s in %v", liar.Name(), err)
		}
	}
}

// walkErrors calls visit on err and every error it wraps.
func walkErrors(err error, visit func(error)) {
	if err == nil {
		return
	}
	visit(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, visit)
		}
	}
}

// TestLyingNodesFailAloneInEveryCall: beside three real nodes, two that
// answer every lock command badly (every fakeresp fault) are each call's own
// failure, for every call that reaches the nodes, not only acquire and
// release: Extend, Inspect, Locks, Released and ForceRelease all succeed on
// the majority, without a panic or a hang.
func TestLyingNodesFailAloneInEveryCall(t *testing.T) {
	t.Parallel()
	real := startCluster(t, 3)
	for _, f := range fakeresp.Faults {
		t.Run(f.Name, func(t *testing.T) {
			c := newClient(t, append(nodesOf(real), lyingNodes(t, 2, f)...), redlock.WithNodeTimeout(testNodeTimeout))
			ctx := ctxFor(t)
			key := uniqueKey(t)
			l, err := c.Acquire(ctx, key, 10*time.Second)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if err := l.Extend(ctx, 10*time.Second); err != nil {
				t.Errorf("extend: %v", err)
			}
			if info, err := c.Inspect(ctx, key); err != nil || !info.Held {
				t.Errorf("inspect: held %v, %v", info.Held, err)
			}
			if err := listedOnce(c, ctx, key); err != nil {
				t.Errorf("locks: %v", err)
			}
			if _, err := c.Released(ctx, key); err != nil {
				t.Errorf("released: %v", err)
			}
			if _, err := c.ForceRelease(ctx, key, ""); err != nil {
				t.Errorf("force release: %v", err)
			}
			if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
				t.Errorf("extend after force release: %v, want ErrLockLost", err)
			}
		})
	}
}

// listedOnce says whether Client.Locks lists key exactly once, with no error.
func listedOnce(c *redlock.Client, ctx context.Context, key string) error {
	n := 0
	for info, err := range c.Locks(ctx, key) {
		if err != nil {
			return err
		}
		if info.Key == key {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%q listed %d times, want once", key, n)
	}
	return nil
}
