package election_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/election"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// The timing logic on memory nodes, on testing/synctest's clock: exact
// bounds in fake time, whatever the machine's load.

func memoryNodes() ([]*memnode.Node, []node.Node) {
	ms := []*memnode.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
	return ms, []node.Node{ms[0], ms[1], ms[2]}
}

// When the nodes stop answering, the term's Done closes before its lock's
// validity ends, with a cause wrapping ErrLockLost.
func TestTermDoneBeforeValidityEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, nodes := memoryNodes()
		e := newElection(t, newClient(t, nodes), "leader", election.WithTTL(time.Second))
		ctx := context.Background()
		term, err := e.Campaign(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // kept alive past its TTL
		if term.Err() != nil {
			t.Fatalf("term ended while the nodes answer: %v", term.Err())
		}
		ms[0].SetDown(true, false)
		ms[1].SetDown(true, false)
		var validUntil time.Time
		for {
			select {
			case <-term.Done():
			default:
				validUntil = term.Lock().ValidUntil()
				time.Sleep(time.Millisecond)
				continue
			}
			break
		}
		if !time.Now().Before(validUntil) {
			t.Fatalf("Done closed at %s, not before the validity's end %s", time.Now(), validUntil)
		}
		if !errors.Is(term.Err(), redlock.ErrLockLost) {
			t.Fatalf("Err = %v, want ErrLockLost", term.Err())
		}
		ms[0].SetDown(false, false)
		ms[1].SetDown(false, false)
		if err := term.Resign(ctx); !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("Resign of a lost term: %v, want ErrLockLost", err)
		}
		time.Sleep(time.Second) // the idle watchdog exits
	})
}

// Observe reports a new leader at most a poll interval after it took over
// when the change is not announced (notifications off), and within a tenth
// of it after an announced release.
func TestObserveDelayBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		notify   bool
		maxDelay time.Duration
	}{
		{"polling", false, time.Second},
		{"announced", true, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, nodes := memoryNodes()
				opt := redlock.WithReleaseNotifications(tc.notify)
				ea := newElection(t, newClient(t, nodes, opt), "leader")
				eb := newElection(t, newClient(t, nodes, opt), "leader")
				watcher := newElection(t, newClient(t, nodes, opt), "leader", election.WithPollInterval(time.Second))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				ch, err := watcher.Observe(ctx)
				if err != nil {
					t.Fatal(err)
				}
				<-ch // no leader yet
				for i := range 5 {
					term, err := ea.Campaign(ctx, "a")
					if err != nil {
						t.Fatal(err)
					}
					if got := nextLeader(t, ch); got.Value != "a" {
						t.Fatalf("round %d: reported %+v, want a", i, got)
					}
					time.Sleep(time.Duration(i) * 300 * time.Millisecond) // vary the phase of the polling
					// b campaigns while a leads: with notifications on, a's
					// resignation is announced and wakes it.
					type won struct {
						term *election.Term
						at   time.Time
						err  error
					}
					bc := make(chan won, 1)
					go func() {
						b, err := eb.Campaign(ctx, "b")
						bc <- won{b, time.Now(), err}
					}()
					synctest.Wait()
					if err := term.Resign(ctx); err != nil {
						t.Fatal(err)
					}
					got := nextLeader(t, ch)
					seen := time.Now()
					w := <-bc
					if w.err != nil {
						t.Fatal(w.err)
					}
					b := w.term
					if got.Value != "b" {
						t.Fatalf("round %d: reported %+v, want b", i, got)
					}
					if d := seen.Sub(w.at); d > tc.maxDelay {
						t.Fatalf("round %d: b reported %s after it took over, want at most %s", i, d, tc.maxDelay)
					}
					if err := b.Resign(ctx); err != nil {
						t.Fatal(err)
					}
					synctest.Wait()
				}
				cancel()
				for range ch {
				}
			})
		})
	}
}

// A candidate whose client never retries (retry.Never) waits between
// attempts instead of spinning: while another leads for 10 s it makes at
// most one attempt per eighth of the TTL, and it leads once the other
// resigns.
func TestCampaignWithoutRetriesWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memoryNodes()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var attempts atomic.Int64
		count := redlock.WithObserver(observe.Func(func(ev observe.Event) {
			if ev.Kind == observe.Attempt && attempts.Add(1) > 1000 {
				cancel() // spinning: end the campaign rather than hang
			}
		}))
		ea := newElection(t, newClient(t, nodes), "leader", election.WithTTL(time.Second))
		eb := newElection(t, newClient(t, nodes, redlock.WithRetry(retry.Never()), count), "leader", election.WithTTL(time.Second))
		a, err := ea.Campaign(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			b, err := eb.Campaign(ctx, "b")
			if err == nil {
				err = b.Resign(ctx)
			}
			got <- err
		}()
		time.Sleep(10 * time.Second)
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("b's campaign: %v", err)
		}
		// 10 s of waits of at least TTL/8 = 125 ms each: at most 81 attempts.
		if n := attempts.Load(); n < 2 || n > 81 {
			t.Fatalf("%d attempts while another led for 10 s, want 2..81", n)
		}
	})
}

// Looks that fail (a majority of the nodes down) report nothing; once the
// nodes are back, Observe reports the state as it is then.
func TestObserveSkipsFailedLooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, nodes := memoryNodes()
		ea := newElection(t, newClient(t, nodes), "leader", election.WithTTL(time.Second))
		eb := newElection(t, newClient(t, nodes), "leader", election.WithTTL(time.Second))
		watcher := newElection(t, newClient(t, nodes), "leader")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a, err := ea.Campaign(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		ch, err := watcher.Observe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := <-ch; got.Value != "a" {
			t.Fatalf("first report %+v, want a", got)
		}
		ms[0].SetDown(true, false)
		ms[1].SetDown(true, false)
		time.Sleep(5 * time.Second) // five failed looks; a's term is lost meanwhile
		synctest.Wait()
		select {
		case got := <-ch:
			t.Fatalf("reported %+v while a majority of the nodes was down", got)
		default:
		}
		if !errors.Is(a.Err(), redlock.ErrLockLost) {
			t.Fatalf("a's term while the nodes were down: %v, want lost", a.Err())
		}
		ms[0].SetDown(false, false)
		ms[1].SetDown(false, false)
		if got := <-ch; got.ID != "" {
			t.Fatalf("after the outage reported %+v, want no leader", got)
		}
		b, err := eb.Campaign(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		if got := nextLeader(t, ch); got.Value != "b" {
			t.Fatalf("reported %+v, want b", got)
		}
		if err := b.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		_ = a.Resign(ctx)
		cancel()
		for range ch {
		}
		time.Sleep(time.Second) // the idle watchdog exits
	})
}
