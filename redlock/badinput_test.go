package redlock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Bad input never panics, never hangs and never succeeds silently: it is an
// ErrInvalidArgument, reported before anything reaches a node.
func TestNewRejectsBadInput(t *testing.T) {
	a, b := redlock.NewMemoryNode("a"), redlock.NewMemoryNode("b")
	var typedNil *redlock.MemoryNode
	cases := map[string]struct {
		nodes []redlock.Node
		opts  []redlock.Option
	}{
		"no nodes":             {nil, nil},
		"nil node":             {[]redlock.Node{a, nil}, nil},
		"typed nil node":       {[]redlock.Node{a, typedNil}, nil},
		"same node twice":      {[]redlock.Node{a, b, a}, nil},
		"same name twice":      {[]redlock.Node{a, redlock.NewMemoryNode("a")}, nil},
		"negative drift":       {[]redlock.Node{a}, []redlock.Option{redlock.WithDriftFactor(-0.1)}},
		"drift of one half":    {[]redlock.Node{a}, []redlock.Option{redlock.WithDriftFactor(0.5)}},
		"NaN drift":            {[]redlock.Node{a}, []redlock.Option{redlock.WithDriftFactor(math.NaN())}},
		"negative retry count": {[]redlock.Node{a}, []redlock.Option{redlock.WithRetry(retry.Constant(-1, time.Millisecond, 0))}},
		"nil retry policy":     {[]redlock.Node{a}, []redlock.Option{redlock.WithRetry(nil)}},
		"negative timeout":     {[]redlock.Node{a}, []redlock.Option{redlock.WithNodeTimeout(-time.Second)}},
		"nil option":           {[]redlock.Node{a}, []redlock.Option{nil}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.New(tc.nodes, tc.opts...)
			if !errors.Is(err, redlock.ErrInvalidArgument) || c != nil {
				t.Fatalf("New = %v, %v; want nil, ErrInvalidArgument", c, err)
			}
		})
	}
	_, err := redlock.New([]redlock.Node{a}, redlock.WithRetry(retry.Constant(-1, 0, 0)))
	if !errors.Is(err, retry.ErrInvalidPolicy) {
		t.Fatalf("a bad policy's cause is lost: %v", err)
	}
}

func TestOperationsRejectBadInput(t *testing.T) {
	node := redlock.NewMemoryNode("m")
	c := newClient(t, []redlock.Node{node})
	var nilCtx context.Context // a variable, so vet does not flag the nil literal
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"nil context":          func() error { _, err := c.Acquire(nilCtx, "k", time.Second); return err },
		"empty key":            func() error { _, err := c.Acquire(ctx, "", time.Second); return err },
		"reserved suffix":      func() error { _, err := c.TryAcquire(ctx, "k"+redlock.FenceSuffix, time.Second); return err },
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
	if h, _ := node.Inspect(ctx, "lock:k"); h.Token != "" || h.Fence != 0 {
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
