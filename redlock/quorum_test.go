package redlock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// The count in an ErrQuorumUnreachable error matches the node
// errors joined in it, one per failed node, and the message is one line.
func TestQuorumErrorCountsAgree(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 5, redlock.WithNodeTimeout(2*time.Second), redlock.WithRetry(retry.Never()))
	ctx := ctxFor(t)
	if _, err := c.TryAcquire(ctx, uniqueKey(t), time.Minute); err != nil { // first contact
		t.Fatal(err)
	}
	for i := range 3 {
		if err := cl.Nodes()[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.TryAcquire(ctx, uniqueKey(t), time.Minute)
	if !errors.Is(err, redlock.ErrQuorumUnreachable) || errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrQuorumUnreachable only", err)
	}
	nodeErrs := countNodeErrors(err)
	if !strings.Contains(err.Error(), fmt.Sprintf("%d of 5 nodes failed", nodeErrs)) || nodeErrs != 3 {
		t.Fatalf("%d node errors joined in %q, want 3 and the same count in the text", nodeErrs, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the message spans lines: %q", err)
	}
}

func countNodeErrors(err error) int {
	var ne *redlock.NodeError
	if errors.As(err, &ne) && ne == err {
		return 1
	}
	n := 0
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			n += countNodeErrors(e)
		}
	case interface{ Unwrap() error }:
		n += countNodeErrors(u.Unwrap())
	}
	return n
}

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

// Rule 2: a majority is needed and enough.
func TestRuleQuorumIsMajority(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 5, redlock.WithRetry(retry.Never()))
	ctx := ctxFor(t)

	key := uniqueKey(t)
	setOn(t, cl, c.KeyName(key), "other", 10*time.Second, 0, 1)
	l, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatalf("3 of 5 free nodes: %v", err)
	}
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, l.Token()) != 3 || countEqual(h, "other") != 2 {
		t.Fatalf("nodes hold %v", h)
	}

	key = uniqueKey(t)
	setOn(t, cl, c.KeyName(key), "other", 10*time.Second, 0, 1, 2)
	if _, err := c.TryAcquire(ctx, key, 5*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("2 of 5 free nodes: err = %v, want ErrNotAcquired", err)
	}
	_ = c.Close() // the undo runs in the background; Close waits for it
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, "other") != 3 || countEqual(h, "") != 2 {
		t.Fatalf("failed attempt left %v, want other on 3 nodes and nothing on 2", h)
	}
}

// Rule 2: nodes are asked in parallel and the call returns once decided,
// not after the slowest node's timeout.
func TestRuleReturnsOnceDecided(t *testing.T) {
	t.Parallel()
	// The paused nodes stay paused: a call that waited for them would take
	// a whole node timeout of 2 minutes. The bound is half that, so that no
	// load can make a call that did not wait look as if it did.
	cl, c := start(t, 5, redlock.WithNodeTimeout(2*time.Minute))
	ctx := ctxFor(t)
	for _, i := range []int{3, 4} {
		if err := cl.Nodes()[i].Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Nodes()[i].Resume() })
	}
	began := time.Now()
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > time.Minute {
		t.Fatalf("acquire+release with 2 paused nodes took %s; they waited for the paused nodes", took)
	}
}

// A node that answers after the node timeout (its client ignores the
// context) counts as failed: the caller is not held up by it.
func TestRuleSilentNodesCountAsFailed(t *testing.T) {
	t.Parallel()
	cl, c := startSlow(t, 2*time.Second, redlock.WithRetry(retry.Never()), redlock.WithNodeTimeout(100*time.Millisecond))
	key := uniqueKey(t)
	began := time.Now()
	_, err := c.TryAcquire(ctxFor(t), key, 5*time.Second)
	if !errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("err = %v, want ErrQuorumUnreachable", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("waited %s for nodes that ignore their 100ms timeout", took)
	}
	// The late answers are released in the background once they arrive.
	deadline := time.Now().Add(5 * time.Second)
	for countEqual(holders(t, cl, c.KeyName(key)), "") != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("late acquisitions were never released: %v", holders(t, cl, c.KeyName(key)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
