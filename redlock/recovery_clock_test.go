package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// memNodes returns n memory nodes and the same as node.Node.
func memNodes(n int) ([]*memnode.Node, []node.Node) {
	ms := make([]*memnode.Node, n)
	ns := make([]node.Node, n)
	for i := range ms {
		ms[i] = memnode.New(string(rune('a' + i)))
		ns[i] = ms[i]
	}
	return ms, ns
}

// The keeper of a held key, beside two nodes that lost it, has its server
// clock step back (by 5 s, by an hour), and the nodes that lost it have
// theirs step forward by an hour: a competitor is still refused while the
// holder is valid. Nothing of the rule reads a clock across servers; a
// learner's clock moves it on by a step (node.LearnStep) at most.
func TestClockStepsLetNoSecondHolderIn(t *testing.T) {
	t.Parallel()
	for _, step := range []time.Duration{5 * time.Second, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl, period = 30 * time.Second, time.Minute
				ms, nodes := memNodes(3)
				opts := []redlock.Option{redlock.WithNodeTimeout(250 * time.Millisecond), redlock.WithRecoveryPeriod(period)}
				holder := newClient(t, nodes, opts...)
				competitor := newClient(t, nodes, opts...)
				ctx := context.Background()
				l, err := holder.TryAcquire(ctx, "k", ttl)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ms[:2] {
					m.SetDown(true, true)
					m.SetDown(false, false)
				}
				refused := func(when string) {
					t.Helper()
					_ = competitor.Close() // the undo of its last attempt has landed: the learners are free
					if _, err := competitor.TryAcquire(ctx, "k", ttl); !errors.Is(err, redlock.ErrRecovering) {
						t.Fatalf("%s: %v, want ErrRecovering", when, err)
					}
				}
				refused("after the wipe")
				ms[2].SetClockOffset(-step)
				refused("after the keeper's clock stepped back")
				for _, m := range ms[:2] {
					m.SetClockOffset(time.Hour)
				}
				refused("after the learners' clocks stepped forward")
				time.Sleep(ttl / 2)
				refused("half a TTL later")
				if l.Remaining() <= 0 {
					t.Fatal("the holder's validity ran out during the test")
				}
			})
		})
	}
}

// A node that lost its data counts again once it has kept it for the
// period, by its own clock, learning while nobody takes a lock (the client
// keeps it moving): with another node down, acquisitions are refused until
// then, and succeed from then on. A clock step forward on it gains it one
// step at most.
func TestLearnerCountsAfterThePeriod(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const period = time.Minute
		ms, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithNodeTimeout(250*time.Millisecond), redlock.WithRecoveryPeriod(period))
		ctx := context.Background()
		l, err := c.TryAcquire(ctx, "first", time.Second) // a new deployment: all vote from now on
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
		ms[0].SetDown(true, true)
		ms[0].SetDown(false, false)
		ms[1].SetDown(true, false)
		start := time.Now()
		if _, err := c.TryAcquire(ctx, "k", time.Second); !errors.Is(err, redlock.ErrRecovering) {
			t.Fatalf("right after the wipe: %v, want ErrRecovering", err)
		}
		ms[0].SetClockOffset(time.Hour)
		time.Sleep(period - 5*time.Second)
		_, err = c.TryAcquire(ctx, "k", time.Second)
		if !errors.Is(err, redlock.ErrRecovering) {
			t.Fatalf("%s after the wipe: %v, want ErrRecovering", time.Since(start), err)
		}
		if d := sitsOutFor(t, err); d > 5*time.Second || d < 3*time.Second {
			t.Fatalf("%s after the wipe, sits out for up to %s more, want 3 to 5 s (a step gained at most)", time.Since(start), d)
		}
		time.Sleep(5 * time.Second)
		l, err = c.TryAcquire(ctx, "k", time.Second)
		if err != nil {
			t.Fatalf("after the period: %v", err)
		}
		_ = l.Release(ctx)
	})
}

// With exactly a quorum of nodes up, all voting, an acquisition of a new
// key and of a key used before returns without waiting for the dead nodes
// (on the fake clock: no node timeout passes), and nothing sits out.
func TestExactQuorumDoesNotWaitForDeadNodes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		ms, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithNodeTimeout(timeout), redlock.WithRecoveryPeriod(time.Minute))
		ctx := context.Background()
		l, err := c.TryAcquire(ctx, "first", 10*time.Second) // a new deployment: all vote from now on
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
		for _, m := range ms[3:] {
			m.SetDown(true, false)
		}
		for i, key := range []string{"used", "used", "new-1", "new-2"} {
			start := time.Now()
			l, err := c.TryAcquire(ctx, key, 10*time.Second)
			if err != nil {
				t.Fatalf("attempt %d on %q with 3 of 5 up: %v", i, key, err)
			}
			_ = l.Release(ctx)
			if i > 0 { // the first meets the dead nodes for the first time
				if d := time.Since(start); d >= timeout {
					t.Fatalf("attempt %d on %q took %s: it waited for the dead nodes", i, key, d)
				}
			}
		}
	})
}
