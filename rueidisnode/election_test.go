package rueidisnode_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Leader election over rueidis nodes: a campaign, the leader seen by
// another client, an observer woken by the resignation (rueidis delivers
// the release notifications), and the next term with a larger fence.
func TestElectionOverRueidis(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx := ctxWithin(t, hangGuard)
	name := lockKey(t)
	ea, err := election.New(newClient(t, nodesOf(t, cl)), name)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := election.New(newClient(t, nodesOf(t, cl)), name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := eb.Leader(ctx); err != nil || l.Value != "a" || l.Fence < a.Fence() {
		t.Fatalf("Leader = %+v, %v; want a with fence >= %d", l, err, a.Fence())
	}
	ch, err := eb.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := <-ch; l.Value != "a" {
		t.Fatalf("Observe's first report %+v, want a", l)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if l := <-ch; l.ID != "" {
		t.Fatalf("Observe after the resignation reported %+v, want no leader", l)
	}
	b, err := eb.Campaign(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Resign(ctx)
	if b.Fence() <= a.Fence() {
		t.Fatalf("b's fence %d not above a's %d", b.Fence(), a.Fence())
	}
	seen := false
	for l := range ch {
		if seen = l.Value == "b"; seen {
			break
		}
	}
	if !seen {
		t.Fatal("Observe never reported b")
	}
	if l, err := ea.Leader(ctx); err != nil || l.Value != "b" {
		t.Fatalf("Leader while b leads: %+v, %v", l, err)
	}
}
