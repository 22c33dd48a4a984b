package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

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
