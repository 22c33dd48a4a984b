package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// One node killed and one paused of 5: the majority of 3 still locks.
func TestMinorityDownStillLocks(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 5) // the paused node costs no node timeout: the answer comes at a majority
	ctx := ctxFor(t)
	if err := cl.Nodes()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[1].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[1].Resume() })
	for range 5 {
		l, err := c.Acquire(ctx, uniqueKey(t), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Three of 5 nodes down: Acquire fails with the typed error, naming the
// nodes, within the retry policy, and does not hang.
func TestMajorityDownFailsTyped(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 5,
		redlock.WithNodeTimeout(200*time.Millisecond),
		redlock.WithRetry(retry.Constant(3, 50*time.Millisecond, 0)))
	ctx := ctxFor(t)
	_ = cl.Nodes()[0].Kill()
	_ = cl.Nodes()[1].Kill()
	if err := cl.Nodes()[2].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Nodes()[2].Resume() })
	var attempts int
	c2 := newClient(t, nodesOf(cl),
		redlock.WithNodeTimeout(200*time.Millisecond),
		redlock.WithRetry(retry.Constant(3, 50*time.Millisecond, 0)),
		redlock.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Attempt {
				attempts++
			}
		})))
	_ = c
	began := time.Now()
	_, err := c2.Acquire(ctx, uniqueKey(t), 5*time.Second)
	took := time.Since(began)
	if !errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("err = %v, want ErrQuorumUnreachable", err)
	}
	var ne *redlock.NodeError
	if !errors.As(err, &ne) || ne.Op != "acquire" || ne.Node == "" {
		t.Fatalf("no NodeError in %v", err)
	}
	// 1 + 3 retries; a waiter whose attempt began before a release
	// subscription came up (nodes 3 and 4 subscribe meanwhile) tries once
	// more at once, without using up a retry: at most one per node.
	if attempts < 4 || attempts > 4+5 {
		t.Fatalf("%d attempts in %s, want 1 + 3 retries (+ at most one per subscription that came up)", attempts, took)
	}
}

// A node restarted empty has lost its script cache: the client's EVALSHA
// gets NOSCRIPT and falls back to EVAL, on the same go-redis client.
func TestNoscriptAfterRestart(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	cycle := func() {
		t.Helper()
		key := uniqueKey(t)
		l, err := c.TryAcquire(ctx, key, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes() {
		if err := n.Client().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Acquire on all three must work, node 0 included.
	key := uniqueKey(t)
	l, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for countEqual(holders(t, cl, c.KeyName(key)), l.Token()) != 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if h := holders(t, cl, c.KeyName(key)); h[0] != l.Token() {
		t.Fatalf("restarted node did not take the lock: %v", h)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cycle()
}

// A lock's handle is safe to share: concurrent Extend, Release and reads
// race only in the way the API promises (exactly one Release wins).
func TestLockHandleIsSafeToShare(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3)
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			_ = l.ValidUntil()
			_ = l.Remaining()
			if i%2 == 0 {
				_ = l.Extend(ctx, 5*time.Second)
				errs <- nil
				return
			}
			errs <- l.Release(ctx)
		}()
	}
	released := 0
	for range 16 {
		if err := <-errs; err == nil {
			released++
		} else if !errors.Is(err, redlock.ErrLockLost) {
			t.Fatal(err)
		}
	}
	if released != 8+1 { // 8 extends report nil, exactly one of 8 releases wins
		t.Fatalf("%d nil results, want 9 (8 extends + 1 release)", released)
	}
}
