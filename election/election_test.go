package election_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// One candidate leads: Leader reports its value, fence and start; after
// Resign there is no leader, and the next term's fence is larger.
func TestCampaignLeaderResign(t *testing.T) {
	cl := redistest.StartT(t, 3)
	c := newClient(t, nodesOf(cl))
	e := newElection(t, c, uniqueName(t))
	ctx := ctxFor(t)
	if _, err := e.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v, want ErrNoLeader", err)
	}
	before := time.Now().Add(-time.Millisecond)
	term, err := e.Campaign(ctx, "node-a:8080")
	if err != nil {
		t.Fatal(err)
	}
	if term.Value() != "node-a:8080" || term.Fence() == 0 || term.Err() != nil {
		t.Fatalf("term value %q fence %d err %v", term.Value(), term.Fence(), term.Err())
	}
	got, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != "node-a:8080" || got.Fence < term.Fence() || got.ID == "" || got.Since.Before(before) || got.Since.After(time.Now()) {
		t.Fatalf("Leader = %+v; want node-a:8080, fence >= %d, since after %s", got, term.Fence(), before)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term.Done():
	default:
		t.Fatal("Done not closed after Resign")
	}
	if !errors.Is(term.Err(), redlock.ErrReleased) {
		t.Fatalf("Err after Resign = %v, want ErrReleased", term.Err())
	}
	if err := term.Resign(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("second Resign: %v, want ErrLockLost", err)
	}
	if _, err := e.Leader(ctx); !errors.Is(err, election.ErrNoLeader) {
		t.Fatalf("Leader after Resign: %v, want ErrNoLeader", err)
	}
	next, err := e.Campaign(ctx, "node-b:8080")
	if err != nil {
		t.Fatal(err)
	}
	defer next.Resign(ctx)
	if next.Fence() <= term.Fence() {
		t.Fatalf("next term's fence %d not above %d", next.Fence(), term.Fence())
	}
}

// A second candidate blocks in Campaign while the first leads, and leads
// once the first resigns. Only one leads at a time: the count of leaders
// never exceeds one.
func TestCampaignWaitsForResign(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t)
	ea := newElection(t, newClient(t, nodesOf(cl)), t.Name())
	eb := newElection(t, newClient(t, nodesOf(cl)), t.Name())
	a, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *election.Term, 1)
	errc := make(chan error, 1)
	go func() {
		b, err := eb.Campaign(ctx, "b")
		if err != nil {
			errc <- err
			return
		}
		got <- b
	}()
	// b must not lead while a does: a Leader look says a, and a is still
	// held after b has tried (b's attempts run while we look).
	for range 5 {
		l, err := ea.Leader(ctx)
		if err != nil || l.Value != "a" {
			t.Fatalf("Leader while a leads = %+v, %v", l, err)
		}
		select {
		case <-got:
			t.Fatal("b leads while a has not resigned")
		case err := <-errc:
			t.Fatal(err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	var b *election.Term
	select {
	case b = <-got:
	case err := <-errc:
		t.Fatal(err)
	}
	defer b.Resign(ctx)
	if b.Fence() <= a.Fence() {
		t.Fatalf("b's fence %d not above a's %d", b.Fence(), a.Fence())
	}
	if l, err := eb.Leader(ctx); err != nil || l.Value != "b" {
		t.Fatalf("Leader = %+v, %v; want b", l, err)
	}
}

// Bad input gets a typed error, never a panic or a hang.
func TestBadInput(t *testing.T) {
	c, err := redlock.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var nilCtx context.Context // a variable, so vet does not flag the nil literal
	for name, f := range map[string]func() error{
		"nil client":  func() error { _, err := election.New(nil, "x"); return err },
		"empty name":  func() error { _, err := election.New(c, ""); return err },
		"brace name":  func() error { _, err := election.New(c, "}x"); return err },
		"long name":   func() error { _, err := election.New(c, strings.Repeat("n", redlock.MaxKeyLength+1)); return err },
		"nil option":  func() error { _, err := election.New(c, "x", nil); return err },
		"zero ttl":    func() error { _, err := election.New(c, "x", election.WithTTL(0)); return err },
		"neg poll":    func() error { _, err := election.New(c, "x", election.WithPollInterval(-time.Second)); return err },
		"empty value": func() error { _, err := newElection(t, c, "x").Campaign(context.Background(), ""); return err },
		"ctrl value":  func() error { _, err := newElection(t, c, "x").Campaign(context.Background(), "a\nb"); return err },
		"long value": func() error {
			_, err := newElection(t, c, "x").Campaign(context.Background(), strings.Repeat("v", 300))
			return err
		},
		"nil ctx":     func() error { _, err := newElection(t, c, "x").Campaign(nilCtx, "v"); return err },
		"leader nil":  func() error { _, err := newElection(t, c, "x").Leader(nilCtx); return err },
		"observe nil": func() error { _, err := newElection(t, c, "x").Observe(nilCtx); return err },
		"owner on ctx": func() error {
			_, err := c.TryAcquire(redlock.ContextWithOwner(context.Background(), "a\x00"), "k", time.Second)
			return err
		},
	} {
		if err := f(); !errors.Is(err, redlock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

// A campaign ends with ctx: Campaign returns ctx's error, and nothing
// is held by the canceled candidate.
func TestCampaignCanceled(t *testing.T) {
	cl := redistest.StartT(t, 3)
	c := newClient(t, nodesOf(cl))
	e := newElection(t, c, uniqueName(t))
	ctx := ctxFor(t)
	a, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Resign(ctx)
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	if _, err := e.Campaign(cctx, "b"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Campaign: %v, want context.Canceled", err)
	}
	if l, err := e.Leader(ctx); err != nil || l.Value != "a" {
		t.Fatalf("Leader = %+v, %v; want a", l, err)
	}
}
