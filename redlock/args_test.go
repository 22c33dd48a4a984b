package redlock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/redis/go-redis/v9"
)

// Bad input never panics, never hangs and never succeeds silently: it is an
// ErrInvalidArgument, reported before anything reaches a node.
func TestNewRejectsBadInput(t *testing.T) {
	t.Parallel()
	a, b := memnode.New("a"), memnode.New("b")
	var typedNil *memnode.Node
	cases := map[string]struct {
		nodes []node.Node
		opts  []redlock.Option
	}{
		"no nodes":             {nil, nil},
		"nil node":             {[]node.Node{a, nil}, nil},
		"typed nil node":       {[]node.Node{a, typedNil}, nil},
		"same node twice":      {[]node.Node{a, b, a}, nil},
		"same name twice":      {[]node.Node{a, memnode.New("a")}, nil},
		"negative drift":       {[]node.Node{a}, []redlock.Option{redlock.WithDriftFactor(-0.1)}},
		"drift of one half":    {[]node.Node{a}, []redlock.Option{redlock.WithDriftFactor(0.5)}},
		"NaN drift":            {[]node.Node{a}, []redlock.Option{redlock.WithDriftFactor(math.NaN())}},
		"negative retry count": {[]node.Node{a}, []redlock.Option{redlock.WithRetry(retry.Constant(-1, time.Millisecond, 0))}},
		"nil retry policy":     {[]node.Node{a}, []redlock.Option{redlock.WithRetry(nil)}},
		"negative timeout":     {[]node.Node{a}, []redlock.Option{redlock.WithNodeTimeout(-time.Second)}},
		"nil option":           {[]node.Node{a}, []redlock.Option{nil}},
		"short retention":      {[]node.Node{a}, []redlock.Option{redlock.WithFenceRetention(time.Millisecond)}},
		"brace in prefix":      {[]node.Node{a}, []redlock.Option{redlock.WithKeyPrefix("app{}")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.New(tc.nodes, tc.opts...)
			if !errors.Is(err, redlock.ErrInvalidArgument) || c != nil {
				t.Fatalf("New = %v, %v; want nil, ErrInvalidArgument", c, err)
			}
		})
	}
	_, err := redlock.New([]node.Node{a}, redlock.WithRetry(retry.Constant(-1, 0, 0)))
	if !errors.Is(err, retry.ErrInvalidPolicy) {
		t.Fatalf("a bad policy's cause is lost: %v", err)
	}
}

func TestOperationsRejectBadInput(t *testing.T) {
	t.Parallel()
	m := memnode.New("m")
	c := newClient(t, []node.Node{m})
	var nilCtx context.Context // a variable, so vet does not flag the nil literal
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"nil context":          func() error { _, err := c.Acquire(nilCtx, "k", time.Second); return err },
		"empty key":            func() error { _, err := c.Acquire(ctx, "", time.Second); return err },
		"key starting with }":  func() error { _, err := c.TryAcquire(ctx, "}x", time.Second); return err },
		"zero ttl":             func() error { _, err := c.Acquire(ctx, "k", 0); return err },
		"negative ttl":         func() error { _, err := c.TryAcquire(ctx, "k", -time.Second); return err },
		"ttl under node time":  func() error { _, err := c.Acquire(ctx, "k", 5*time.Millisecond); return err },
		"ttl with no validity": func() error { _, err := c.TryAcquire(ctx, "k", 12*time.Millisecond); return err },
	} {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, redlock.ErrInvalidArgument) {
				t.Fatalf("err = %v, want ErrInvalidArgument", err)
			}
		})
	}
	if h, _ := m.Inspect(ctx, c.KeyName("k")); h.Token != "" || h.Fence != 0 {
		t.Fatalf("a rejected call reached the node: %+v", h)
	}

	l, err := c.TryAcquire(ctx, "held", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(nilCtx, time.Second); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("Extend(nil ctx) = %v", err)
	}
	if err := l.Extend(ctx, 0); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("Extend(0) = %v", err)
	}
	if err := l.Release(nilCtx); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Fatalf("Release(nil ctx) = %v", err)
	}
	if l.Remaining() <= 0 {
		t.Fatal("bad calls cost the lock its validity")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("the lock was lost to bad calls: %v", err)
	}
}

// A key longer than MaxKeyLength fails every call that takes a key with
// ErrInvalidArgument, and nothing reaches a node; the error does not carry
// the whole key.
func TestOverlongKeyIsRefusedBeforeAnyNode(t *testing.T) {
	t.Parallel()
	var servers []*fakeresp.Server
	var nodes []node.Node
	for range 3 {
		s, err := fakeresp.Start(fakeresp.Raw([]byte("+OK\r\n")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		rc := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = rc.Close() })
		servers, nodes = append(servers, s), append(nodes, redisnode.New(rc))
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(testNodeTimeout))
	ctx := ctxFor(t)
	key := strings.Repeat("k", redlock.MaxKeyLength+1)
	noop := func(context.Context) error { return nil }
	calls := map[string]func() error{
		"Acquire":    func() error { _, err := c.Acquire(ctx, key, 10*time.Second); return err },
		"TryAcquire": func() error { _, err := c.TryAcquire(ctx, key, 10*time.Second); return err },
		"Do":         func() error { return c.Do(ctx, key, 10*time.Second, noop) },
		"TryDo":      func() error { _, err := c.TryDo(ctx, key, 10*time.Second, noop); return err },
		"Inspect":    func() error { _, err := c.Inspect(ctx, key); return err },
		"ForceRelease": func() error {
			_, err := c.ForceRelease(ctx, key, "")
			return err
		},
		"Released": func() error { _, err := c.Released(ctx, key); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("%s: the error carries the key: %d bytes", name, len(err.Error()))
		}
	}
	for i, s := range servers {
		if n := s.Commands(); n != 0 {
			t.Errorf("node %d got %d commands for refused calls", i, n)
		}
	}
}

// A key of exactly MaxKeyLength bytes locks as any other.
func TestKeyOfMaxLengthLocks(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.Acquire(ctx, strings.Repeat("k", redlock.MaxKeyLength), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
