package redlock_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// Rule 1: every acquisition gets its own token of at least 128 random bits,
// and that token is what the nodes hold.
func TestRuleTokenIs128RandomBits(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		key := uniqueKey(t)
		l, err := c.TryAcquire(ctx, key, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(l.Token())
		if err != nil || len(raw) < 16 {
			t.Fatalf("token %q is not >= 16 random bytes (%v)", l.Token(), err)
		}
		if seen[l.Token()] {
			t.Fatalf("token %q handed out twice", l.Token())
		}
		seen[l.Token()] = true
		if h := holders(t, cl, c.KeyName(key)); countEqual(h, l.Token()) < c.Quorum() {
			t.Fatalf("nodes hold %v, want the token on a majority", h)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
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
	cl, c := start(t, 5, redlock.WithNodeTimeout(4*time.Second))
	ctx := ctxFor(t)
	for _, i := range []int{3, 4} {
		if err := cl.Nodes()[i].Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Nodes()[i].Resume() })
	}
	began := time.Now()
	l, err := c.TryAcquire(ctx, uniqueKey(t), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Generous bound: far below one node timeout (4 s) for both calls.
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("acquire+release with 2 paused nodes took %s; they waited for the paused nodes", took)
	}
}

// Rule 3: an acquisition whose answers came too late for any validity to be
// left is refused, and leaves nothing behind. The nodes answer after the
// validity (ttl - drift) but inside the client's patience for late answers
// (node timeout + a 50 ms grace): a window only virtual time hits every time,
// so memory nodes in a synctest bubble, whatever the machine's load.
func TestRuleNoValidityNoLock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		mem := []*memnode.Node{memnode.New("m0"), memnode.New("m1"), memnode.New("m2")}
		var nodes []node.Node
		for _, m := range mem {
			nodes = append(nodes, slowNode{Node: m, delay: 410 * time.Millisecond})
		}
		c, err := redlock.New(nodes, redlock.WithRetry(retry.Never()), redlock.WithNodeTimeout(390*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		key := uniqueKey(t)
		_, err = c.TryAcquire(context.Background(), key, 400*time.Millisecond)
		if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "validity") {
			t.Fatalf("err = %v, want ErrNotAcquired for used-up validity", err)
		}
		synctest.Wait()
		for i, m := range mem {
			if h, err := m.Inspect(context.Background(), c.KeyName(key)); err != nil || h.Token != "" {
				t.Fatalf("refused acquisition left a key on node %d: %+v, %v", i, h, err)
			}
		}
	})
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

// Rule 4: a failed attempt releases on every node, including one that
// errored; contended nodes keep their holder.
func TestRuleFailedAttemptLeavesNoKey(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 5, redlock.WithRetry(retry.Never()))
	key := uniqueKey(t)
	setOn(t, cl, c.KeyName(key), "other", 10*time.Second, 0, 1)
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	_, err := c.TryAcquire(ctxFor(t), key, 5*time.Second)
	if err == nil {
		t.Fatal("acquired with 2 holders and 1 dead node of 5")
	}
	h := holders(t, cl, c.KeyName(key))
	if h[0] != "other" || h[1] != "other" || h[3] != "" || h[4] != "" {
		t.Fatalf("after failed attempt nodes hold %v; want other, other, -, none, none", h)
	}
}

// Rule 4: the caller's cancellation does not cut the clean-up short, even on
// nodes whose write landed but whose reply never came.
func TestRuleCancelledAttemptLeavesNoKey(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 5)
	nodes := nodesOf(cl)
	for i := 2; i < 5; i++ {
		nodes[i] = hangingNode{nodes[i]}
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(5*time.Second))
	key := uniqueKey(t)
	ctx, cancel := context.WithCancel(ctxFor(t))
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := c.Acquire(ctx, key, 30*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	_ = c.Close() // the undo runs in the background; Close waits for it
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, "") != 5 {
		t.Fatalf("cancelled attempt left keys: %v", h)
	}
}

// Rule 5: a waiter comes back when the holder's key expires, not after the
// policy's (long) delay.
func TestRuleWaiterWakesAtHolderExpiry(t *testing.T) {
	t.Parallel()
	// A retry delay far past the test's context: the waiter gets the lock
	// in time only by coming back at the holder's expiry.
	cl, c := start(t, 5, redlock.WithRetry(retry.Constant(3, 10*time.Minute, 0)))
	key := uniqueKey(t)
	setOn(t, cl, c.KeyName(key), "crashed-holder", 400*time.Millisecond, 0, 1, 2, 3, 4)
	began := time.Now()
	l, err := c.Acquire(ctxFor(t), key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Fatalf("acquired after %s, before the holder's 400ms expiry", took)
	}
}

// Rule 6: extend moves the validity forward from the start of the call and
// resets the TTL on the nodes.
func TestRuleExtendMovesValidity(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := l.ValidUntil()
	time.Sleep(200 * time.Millisecond)
	began := time.Now()
	if err := l.Extend(ctx, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	validity := 6*time.Second - c.Drift(6*time.Second)
	if got := l.ValidUntil(); got.Before(began.Add(validity)) || got.After(ended.Add(validity)) || !got.After(before) {
		t.Fatalf("ValidUntil %v: want start of Extend + %s, within [%v, %v]", got, validity, began.Add(validity), ended.Add(validity))
	}
	// Extend returns at a majority; the last node's answer may still be on
	// its way.
	extended := 0
	for _, n := range cl.Nodes() {
		if ttl := n.Client().PTTL(ctx, c.KeyName(l.Key())).Val(); ttl >= 4*time.Second {
			extended++
		}
	}
	if extended < c.Quorum() {
		t.Fatalf("only %d nodes have the extended ttl", extended)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Rule 6: an expired lock is never silently re-acquired by Extend. The lock
// is extended only once its keys are gone from every node (waited for, not
// slept for), with node timeouts a loaded machine meets.
func TestRuleExtendAfterExpiryIsLost(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithNodeTimeout(time.Second))
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	name := c.KeyName(l.Key())
	for deadline := time.Now().Add(time.Minute); countEqual(holders(t, cl, name), "") != 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) { // hang guard
			t.Fatalf("keys of a 2s lock still there after a minute: %v", holders(t, cl, name))
		}
	}
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend after expiry: %v, want ErrLockLost", err)
	}
	if h := holders(t, cl, name); countEqual(h, "") != 3 {
		t.Fatalf("extend after expiry re-created keys: %v", h)
	}
	if l.Remaining() != 0 {
		t.Fatalf("lost lock reports %s remaining", l.Remaining())
	}
}

// Rule 6: a node that restarted empty gets the key back by Extend; the fence
// counter there is raised so it cannot hand out an older fence.
func TestRuleExtendReassertsRestartedNode(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(l.Key()), l.Token())
	if err := cl.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	name := c.KeyName(l.Key())
	_ = c.Close() // Extend returned at a majority; Close waits for the third answer
	if h := holders(t, cl, name); countEqual(h, l.Token()) != 3 {
		t.Fatalf("after extend nodes hold %v, want our token on all 3", h)
	}
	fence, _ := cl.Nodes()[0].Client().Get(ctx, wire.CounterKey(name)).Uint64()
	if fence < l.Fence() {
		t.Fatalf("restarted node's fence counter %d below the lock's fence %d", fence, l.Fence())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Rule 6: when a majority lost the key, Extend reports the loss and takes
// back the keys it re-asserted.
func TestRuleExtendLostOnMajorityRestart(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(l.Key()), l.Token())
	for _, i := range []int{0, 1} {
		if err := cl.Nodes()[i].Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend with 2 of 3 nodes restarted: %v, want ErrLockLost", err)
	}
	_ = c.Close() // the lost lock's keys are deleted in the background
	if h := holders(t, cl, c.KeyName(l.Key())); countEqual(h, "") != 3 {
		t.Fatalf("lost extend left keys: %v", h)
	}
}

// Rules 6 and 7: a lock taken over by another holder can be neither
// extended nor released, and the other holder's keys stay.
func TestRuleTakenOverLockIsLost(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithNodeTimeout(time.Second)) // a loaded machine meets it
	ctx := ctxFor(t)
	key := uniqueKey(t)
	a, err := c.TryAcquire(ctx, key, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-a.Done()                            // no keep-alive: it ends at its validity
	eventuallyFree(t, cl, c.KeyName(key)) // its keys expire soon after, on every node
	b, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	settled(t, cl, c.KeyName(key), b.Token())
	if err := a.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend of taken-over lock: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("release of taken-over lock: %v", err)
	}
	if h := holders(t, cl, c.KeyName(key)); countEqual(h, b.Token()) != 3 {
		t.Fatalf("the new holder's keys were touched: %v", h)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Rule 7: a lock that ended before Release is lost, even when too many
// nodes fail for the cleanup to reach a majority (the answer must not turn
// into ErrQuorumUnreachable, which invites a retry of a lock that is gone).
func TestReleaseOfEndedLockWithFailingNodesIsLost(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3, redlock.WithNodeTimeout(2*time.Second)) // a loaded machine meets it
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-l.Done() // no keep-alive: it ends at its validity
	for _, n := range cl.Nodes()[:2] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	err = l.Release(ctx)
	if !errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Fatalf("release of an ended lock with 2 of 3 nodes down: %v, want ErrLockLost only", err)
	}
}

// Rule 7: release is not repeatable and says so.
func TestRuleReleaseTwiceIsLost(t *testing.T) {
	t.Parallel()
	_, c := start(t, 3, redlock.WithNodeTimeout(5*time.Second)) // a loaded machine meets it
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("second release: %v, want ErrLockLost", err)
	}
	if err := l.Extend(ctx, 30*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend after release: %v, want ErrLockLost", err)
	}
}

// Rule 7: with too few nodes reachable, release says which failed.
func TestRuleReleaseUnreachable(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	l, err := c.TryAcquire(ctx, uniqueKey(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = cl.Nodes()[1].Kill()
	_ = cl.Nodes()[2].Kill()
	err = l.Release(ctx)
	var ne *redlock.NodeError
	if !errors.Is(err, redlock.ErrQuorumUnreachable) || !errors.As(err, &ne) || ne.Op != "release" {
		t.Fatalf("release with 2 of 3 nodes dead: %v, want ErrQuorumUnreachable with NodeError", err)
	}
}

// Rule 8: counters that drifted apart (an attempt that lost still counted
// on the nodes it reached) must not let a later acquisition on another
// majority get a smaller fence.
func TestRuleFenceSurvivesDivergedCounters(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 3)
	ctx := ctxFor(t)
	key := uniqueKey(t)
	name := c.KeyName(key)
	const ahead = 1 << 52 // above any clock-seeded counter of the other nodes
	if err := cl.Nodes()[2].Client().Set(ctx, wire.CounterKey(name), ahead, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Node 0 is busy, so the first acquisition is decided by nodes 1 and 2:
	// node 2's counter is the maximum, node 1's lags behind it.
	setOn(t, cl, name, "other", 10*time.Second, 0)
	first, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if first.Fence() != ahead+1 {
		t.Fatalf("first fence %d, want %d (the maximum)", first.Fence(), uint64(ahead+1))
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes()[0].Client().Del(ctx, name).Err(); err != nil {
		t.Fatal(err)
	}
	// The next majority, nodes 0 and 1, does not include node 2. Only if
	// node 1 was raised to the first fence does it count above it.
	if err := cl.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	second, err := c.TryAcquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if second.Fence() <= first.Fence() {
		t.Fatalf("fence went from %d to %d on the other majority", first.Fence(), second.Fence())
	}
	_ = second.Release(ctx)
}
