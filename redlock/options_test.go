package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// ContextWithRetry replaces the client's retry policy for one call: the
// call makes the attempts of its own policy, the next call those of the
// client's again; a nil or invalid policy is refused before anything is
// sent.
func TestContextWithRetryIsPerCall(t *testing.T) {
	nodes := []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	var attempts atomic.Int64
	count := observe.Func(func(e observe.Event) {
		if e.Kind == observe.Attempt {
			attempts.Add(1)
		}
	})
	waiter, err := redlock.New(nodes, redlock.WithRetry(retry.Constant(5, time.Millisecond, 0)), redlock.WithObserver(count))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = waiter.Close() }()
	holder, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	held, err := holder.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(context.Background()) }()

	for _, tc := range []struct {
		name string
		ctx  context.Context
		want int64
	}{
		{"one retry", redlock.ContextWithRetry(ctx, retry.Constant(1, time.Millisecond, 0)), 2},
		{"never", redlock.ContextWithRetry(ctx, retry.Never()), 1},
		{"the client's policy", ctx, 6},
	} {
		attempts.Store(0)
		_, err := waiter.Acquire(tc.ctx, "k", time.Second)
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s: Acquire = %v, want ErrNotAcquired", tc.name, err)
		}
		if got := attempts.Load(); got != tc.want {
			t.Errorf("%s: %d attempts, want %d", tc.name, got, tc.want)
		}
	}
	attempts.Store(0)
	err = waiter.Do(redlock.ContextWithRetry(ctx, retry.Never()), "k", time.Second, func(context.Context) error { return nil })
	if !errors.Is(err, redlock.ErrNotAcquired) || attempts.Load() != 1 {
		t.Errorf("Do with retry.Never: %v after %d attempts, want ErrNotAcquired after 1", err, attempts.Load())
	}
	for name, p := range map[string]retry.Policy{"nil": nil, "negative count": retry.Constant(-1, time.Millisecond, 0)} {
		attempts.Store(0)
		_, err := waiter.Acquire(redlock.ContextWithRetry(ctx, p), "free", time.Second)
		if !errors.Is(err, redlock.ErrInvalidArgument) || attempts.Load() != 0 {
			t.Errorf("%s policy: %v after %d attempts, want ErrInvalidArgument before any", name, err, attempts.Load())
		}
	}
}
