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
		got := nextLeader(t, ch)
		if got.Value != value || got.ID == "" || term.Fence() <= prevFence {
			t.Fatalf("report %d = %+v, term fence %d; want %s, fence above the last term's %d", i, got, term.Fence(), value, prevFence)
		}
		// The report may come from a look that raced the term's start
		// (Leader.Fence); a look after Campaign returned sees its fence.
		if l, err := watcher.Leader(ctx); err != nil || l.ID != got.ID || l.Fence < term.Fence() {
			t.Fatalf("look after Campaign = %+v, %v; want term %s with fence >= %d", l, err, got.ID, term.Fence())
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
