package locktest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/locktest"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

const ttl = 30 * time.Second

// holds reports whether node nd holds key (default prefix) with any token.
func holds(t *testing.T, nd *locktest.Node, key string) bool {
	t.Helper()
	h, err := nd.Memory().Inspect(context.Background(), defaults.KeyPrefix+"{"+key+"}")
	if err != nil {
		t.Fatal(err)
	}
	return h.Token != ""
}

func once(q *locktest.Quorum) *redlock.Client { return q.Client(redlock.WithRetry(retry.Never())) }

// A paused node holds requests back and applies them on Resume, also those
// whose client stopped waiting.
func TestPauseAppliesHeldRequestsOnResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		c := once(q)
		q.Node(0).Pause()
		l, err := c.TryAcquire(t.Context(), "k", ttl)
		if err != nil {
			t.Fatalf("two of three nodes answer: %v", err)
		}
		if holds(t, q.Node(0), "k") {
			t.Fatal("a paused node applied a request")
		}
		q.Node(0).Resume()
		synctest.Wait()
		if !holds(t, q.Node(0), "k") {
			t.Fatal("the held-back acquire did not land on resume")
		}
		q.Node(1).Pause()
		q.Node(2).Pause()
		if err := l.Extend(t.Context(), ttl); !errors.Is(err, redlock.ErrQuorumUnreachable) {
			t.Fatalf("extend with two nodes paused: %v, want ErrQuorumUnreachable", err)
		}
	})
}

// A client cut off from a majority cannot lock; another client can.
func TestCutOffIsPerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		a, b := once(q), once(q)
		q.Node(0).CutOff(a)
		q.Node(1).CutOff(a)
		_, err := a.TryAcquire(t.Context(), "k", ttl)
		// The nodes' failure is ErrCutOff, or "failing recently" once the
		// client saw it.
		if !errors.Is(err, redlock.ErrQuorumUnreachable) {
			t.Fatalf("cut-off client: %v, want ErrQuorumUnreachable", err)
		}
		lb, err := b.TryAcquire(t.Context(), "k", ttl)
		if err != nil {
			t.Fatalf("the other client: %v", err)
		}
		if err := lb.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		q.Node(0).Heal(a)
		time.Sleep(time.Second) // the client stops counting node-1 as failing
		if _, err := a.TryAcquire(t.Context(), "k", ttl); err != nil {
			t.Fatalf("healed client: %v", err)
		}
	})
}

// A slowed node delays its answers by the given time, on the fake clock.
func TestSlowDelaysEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 1)
		c := once(q)
		if _, err := c.Inspect(t.Context(), "warm"); err != nil { // first contact identifies the node
			t.Fatal(err)
		}
		q.Node(0).Slow(100 * time.Millisecond)
		start := time.Now()
		_, err := c.TryAcquire(t.Context(), "k", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Fatalf("acquire took %v on a node slowed by 100ms", took)
		}
		q.Node(0).Slow(0)
		start = time.Now()
		if _, err := c.Inspect(t.Context(), "k"); err != nil || time.Since(start) != 0 {
			t.Fatalf("after Slow(0): %v, took %v", err, time.Since(start))
		}
	})
}

// Stop refuses requests keeping the data; RestartEmpty loses it.
func TestStopKeepsDataRestartEmptyLosesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		c := once(q)
		if _, err := c.TryAcquire(t.Context(), "k", ttl); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the request to the third node lands
		q.Node(0).Stop()
		if _, err := q.Node(0).Memory().Inspect(t.Context(), "x"); !errors.Is(err, memnode.ErrDown) {
			t.Fatalf("stopped node answered: %v", err)
		}
		q.Node(0).Start()
		if !holds(t, q.Node(0), "k") {
			t.Fatal("a stopped node lost its data")
		}
		q.Node(0).RestartEmpty()
		if holds(t, q.Node(0), "k") || q.Node(0).Memory().Len() != 0 {
			t.Fatal("a node restarted empty kept data")
		}
	})
}

// A node's clock jumping forward past the TTL expires its keys; the lock
// still holds on the others.
func TestJumpClockExpiresKeysOnThatNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := locktest.NewQuorum(t, 3)
		a, b := once(q), once(q)
		if _, err := a.TryAcquire(t.Context(), "k", ttl); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the request to the third node lands
		q.Node(0).JumpClock(ttl)
		if holds(t, q.Node(0), "k") || !holds(t, q.Node(1), "k") {
			t.Fatal("the jump did not expire the key on its node only")
		}
		if _, err := b.TryAcquire(t.Context(), "k", ttl); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("another client with one node jumped: %v, want ErrNotAcquired", err)
		}
	})
}

// The same quorum runs on real time outside a bubble.
func TestQuorumOnRealTime(t *testing.T) {
	q := locktest.NewQuorum(t, 3)
	c := once(q)
	l, err := c.TryAcquire(t.Context(), "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	q.Node(2).Stop()
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}
