package redlock_test

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// A competitor turned away because too many nodes lost their data for the
// key (FLUSHALL on 2 of 3 while the key is held) learns it from the error:
// ErrRecovering beside ErrNotAcquired, and for how long at most the nodes
// sit out.
func TestNodesSittingOutAreTheirOwnError(t *testing.T) {
	t.Parallel()
	const period = time.Minute
	cl := startCluster(t, 3)
	holder := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period))
	competitor := newClient(t, nodesOf(cl), redlock.WithNodeTimeout(testNodeTimeout), redlock.WithRecoveryPeriod(period))
	ctx, key := ctxFor(t), uniqueKey(t)
	name := "lock:{" + key + "}"
	l, err := holder.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	nodes := cl.Nodes()
	waitMarkerOlder(t, nodes[2], name, testNodeTimeout+100*time.Millisecond)
	for _, i := range []int{0, 1} {
		if err := nodes[i].Client().FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, err = competitor.TryAcquire(ctx, key, 30*time.Second)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, redlock.ErrRecovering) {
		t.Fatalf("competitor after FLUSHALL of 2 of 3 nodes: %v, want ErrNotAcquired and ErrRecovering", err)
	}
	m := regexp.MustCompile(`too few nodes kept their data for the key, for up to (\S+) more`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error %q does not say how long the nodes sit out", err)
	}
	left, perr := time.ParseDuration(m[1])
	if perr != nil || left <= 0 || left > period {
		t.Fatalf("the error says the nodes sit out %q more, want within (0, %s]: %v", m[1], period, perr)
	}
	var ne *redlock.NodeError
	if !errors.As(err, &ne) || !errors.Is(ne, redlock.ErrRecovering) {
		t.Fatalf("the error %q carries no recovering node", err)
	}
	if _, rest := recoveringTimes(t, ne); rest != left {
		t.Fatalf("the error says %s, its node %s: want the longest one's", left, rest)
	}
}
