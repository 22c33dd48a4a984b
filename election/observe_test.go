package election_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// observeSequence runs n leaders one after the other, each resigning only
// once the observer has reported it, and checks that the observer reported
// every term, in order (counting events; no time limits but the hang
// guard). A change missed for good hangs the test until the hang guard.
func observeSequence(t *testing.T, n int, opts ...redlock.Option) {
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	name := uniqueName(t)
	candidates := []*election.Election{
		newElection(t, newClient(t, nodesOf(cl), opts...), name),
		newElection(t, newClient(t, nodesOf(cl), opts...), name),
	}
	watcher := newElection(t, newClient(t, nodesOf(cl), opts...), name, election.WithPollInterval(500*time.Millisecond))
	octx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := watcher.Observe(octx)
	if err != nil {
		t.Fatal(err)
	}
	if first := <-ch; first.ID != "" {
		t.Fatalf("first report %+v, want no leader", first)
	}
	var prevFence uint64
	for i := range n {
		value := fmt.Sprintf("leader-%d", i)
		term, err := candidates[i%2].Campaign(ctx, value)
		if err != nil {
			t.Fatal(err)
		}
		// A look after Campaign returned sees the term, with its fence.
		l, err := watcher.Leader(ctx)
		if err != nil || l.Value != value || l.ID == "" || l.Fence < term.Fence() || term.Fence() <= prevFence {
			t.Fatalf("look after Campaign %d = %+v, %v; term fence %d; want %s with fence >= the term's, above the last term's %d", i, l, err, term.Fence(), value, prevFence)
		}
		// Observe reports the term. A look that raced the campaign may first
		// report an attempt of it that failed after reaching a majority of
		// the nodes (same value, another ID): never another value.
		for got := nextLeader(t, ch); got.ID != l.ID; got = nextLeader(t, ch) {
			if got.Value != value {
				t.Fatalf("report %+v while %s campaigned; want %s", got, value, l.ID)
			}
			t.Logf("term %d: first reported under the ID of a failed attempt, %s", i, got.ID)
		}
		prevFence = term.Fence()
		if err := term.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	for range ch { // drain: the channel closes once ctx ends
	}
}

// With release notifications (the default), Observe reports each of a
// sequence of leaders.
func TestObserveSeesEveryLeader(t *testing.T) { observeSequence(t, 8) }

// With notifications off, polling alone still reports each leader.
func TestObservePollsWithoutNotifications(t *testing.T) {
	observeSequence(t, 4, redlock.WithReleaseNotifications(false))
}
