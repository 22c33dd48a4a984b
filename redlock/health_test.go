package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A node whose request failed stays failing until it answers, however long
// the client is idle meanwhile, and its first answer clears the mark.
func TestFailingMarkLastsUntilTheNodeAnswers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = 100 * time.Millisecond
		ms := memNodes(3)
		c := mustNew(t, asNodes(ms), WithNodeTimeout(nodeTimeout))
		ctx := context.Background()
		if _, err := c.TryAcquire(ctx, "first", time.Second); err != nil { // first contact
			t.Fatal(err)
		}
		ms[2].SetDown(true, false)
		if _, err := c.TryAcquire(ctx, "second", time.Second); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // node 2's failure is noted
		if !c.health.failing(2) {
			t.Fatal("node 2 failed and is not marked failing")
		}
		time.Sleep(10 * nodeTimeout)
		if !c.health.failing(2) {
			t.Fatalf("node 2's mark lapsed after %s without an answer from it", 10*nodeTimeout)
		}
		ms[2].SetDown(false, false)
		if _, err := c.TryAcquire(ctx, "third", time.Second); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c.health.failing(2) {
			t.Fatal("node 2 answered and is still marked failing")
		}
		_ = c.Close()
	})
}

// A failing mark never makes a call give up with ErrQuorumUnreachable by
// itself: with two of three nodes marked but back up, an attempt waits for
// them, and takes the lock.
func TestStaleFailingMarksDoNotMakeAQuorumUnreachable(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ms := memNodes(3)
		nodes := asNodes(ms)
		for i := 1; i < 3; i++ { // their answers come after node 0's
			nodes[i] = late{Node: ms[i], delay: 5 * time.Millisecond}
		}
		c := mustNew(t, nodes, WithNodeTimeout(100*time.Millisecond))
		ctx := context.Background()
		if _, err := c.TryAcquire(ctx, "first", time.Second); err != nil { // first contact
			t.Fatal(err)
		}
		ms[1].SetDown(true, false)
		ms[2].SetDown(true, false)
		if _, err := c.TryAcquire(ctx, "down", time.Second); !errors.Is(err, ErrQuorumUnreachable) {
			t.Fatalf("err = %v, want ErrQuorumUnreachable", err)
		}
		synctest.Wait()
		ms[1].SetDown(false, false)
		ms[2].SetDown(false, false)
		if !c.health.failing(1) || !c.health.failing(2) {
			t.Fatal("nodes 1 and 2 are not marked failing")
		}
		l, err := c.TryAcquire(ctx, "up", time.Second)
		if err != nil {
			t.Fatalf("every node is up again: %v", err)
		}
		_ = l.Release(ctx)
		_ = c.Close()
	})
}
