package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The tally's verdicts at the edges of a 5-node quorum (q = 3): two
// failures or refusals can be spared, three cannot.
func TestTallyVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name                                   string
		granted, refused, failed               int
		won, cannotWin, unreachable, missesAny bool
	}{
		{name: "nothing yet"},
		{name: "majority yes", granted: 3, won: true},
		{name: "two spared", granted: 1, refused: 1, failed: 1},
		{name: "refusals and failures add up", refused: 2, failed: 1, cannotWin: true},
		{name: "failures alone", failed: 3, cannotWin: true, unreachable: true, missesAny: true},
		{name: "refusals alone are not unreachable", refused: 3, cannotWin: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTally(5)
			tl.Granted, tl.Refused = tc.granted, tc.refused
			for range tc.failed {
				tl.Fail(ErrNoAnswer)
			}
			if tl.Failed != len(tl.Failures) {
				t.Fatalf("Failed %d, %d failures", tl.Failed, len(tl.Failures))
			}
			if tl.Won() != tc.won || tl.CannotWin() != tc.cannotWin || tl.Unreachable() != tc.unreachable || tl.MissesAMajority() != tc.missesAny {
				t.Fatalf("won %v cannotWin %v unreachable %v missesAMajority %v, want %v %v %v %v",
					tl.Won(), tl.CannotWin(), tl.Unreachable(), tl.MissesAMajority(), tc.won, tc.cannotWin, tc.unreachable, tc.missesAny)
			}
			if tl.Decided() != (tc.won || tc.cannotWin) {
				t.Fatalf("decided %v", tl.Decided())
			}
		})
	}
}

// fakeCaller records what rounds tell their caller; failing marks nodes
// failing.
type fakeCaller struct {
	mu       sync.Mutex
	failing  map[int]bool
	notes    map[int][]error // per node, every Note
	reported int
	stalled  []int // StallGuardFired's silent counts
	panics   int
}

func newFakeCaller(failing ...int) *fakeCaller {
	f := &fakeCaller{failing: map[int]bool{}, notes: map[int][]error{}}
	for _, i := range failing {
		f.failing[i] = true
	}
	return f
}

func (f *fakeCaller) Failing(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failing[i]
}

func (f *fakeCaller) Note(a Ask, i int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes[i] = append(f.notes[i], err)
}

func (f *fakeCaller) Panicked(a Ask, i int, err error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.panics++
	return fmt.Errorf("panicked: %w", err)
}

func (f *fakeCaller) NodeError(a Ask, i int, err error) error {
	return fmt.Errorf("node %d: %s: %w", i, a.Op, err)
}

func (f *fakeCaller) Report(a Ask, i int, err error, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reported++
}

func (f *fakeCaller) StallGuardFired(a Ask, silent int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stalled = append(f.stalled, silent)
}

// fakeNodes answers yes after each node's delay; a node without a delay
// answers only when released (and then fails).
type fakeNodes struct {
	delay   map[int]time.Duration
	release chan struct{}
	wg      sync.WaitGroup // the round's requests (a Group)
}

func newFakeNodes(delay map[int]time.Duration) *fakeNodes {
	return &fakeNodes{delay: delay, release: make(chan struct{})}
}

func (f *fakeNodes) Add(d int) { f.wg.Add(d) }
func (f *fakeNodes) Done()     { f.wg.Done() }

func (f *fakeNodes) call(ctx context.Context, i int) (bool, error) {
	d, ok := f.delay[i]
	if !ok {
		<-f.release
		return false, errors.New("released late")
	}
	time.Sleep(d)
	return true, nil
}

// end releases the silent nodes and waits for every request.
func (f *fakeNodes) end() {
	close(f.release)
	f.wg.Wait()
}

var five = []int{0, 1, 2, 3, 4}

func start(c Caller, nodes *fakeNodes, timeout time.Duration) *Round[bool] {
	return Start(c, Ask{Op: "acquire", Key: "k", Parent: context.Background()}, 5, five, timeout, nodes, nodes.call)
}

// A round read until decided returns with the majority's answers, not
// waiting for the silent nodes.
func TestCollectUntilDecided(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := newFakeNodes(map[int]time.Duration{0: time.Millisecond, 1: 2 * time.Millisecond, 2: 3 * time.Millisecond})
		defer nodes.end()
		r := start(newFakeCaller(), nodes, time.Second)
		defer r.Close()
		began := time.Now()
		tl := NewTally(5)
		if err := r.Collect(&tl, Rules{UntilDecided: true}, tl.CountHeld); err != nil {
			t.Fatal(err)
		}
		if !tl.Won() || time.Since(began) != 3*time.Millisecond || r.Pending() != 2 || r.RepliedIn() != 3*time.Millisecond {
			t.Fatalf("won %v after %s, %d pending, replied in %s", tl.Won(), time.Since(began), r.Pending(), r.RepliedIn())
		}
	})
}

// The stall guard: nodes that never answer are failures after the
// timeout plus StallGrace, each noted, the guard's firing told once.
func TestStallGuard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := newFakeNodes(map[int]time.Duration{0: time.Millisecond})
		c := newFakeCaller()
		defer nodes.end()
		r := start(c, nodes, time.Second)
		defer r.Close()
		began := time.Now()
		tl := NewTally(5)
		if err := r.Collect(&tl, Rules{}, tl.CountHeld); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d != time.Second+StallGrace {
			t.Fatalf("gave up after %s", d)
		}
		if tl.Granted != 1 || tl.Failed != 4 || !errors.Is(tl.Failures[0], ErrNoAnswer) {
			t.Fatalf("tally %+v", tl)
		}
		if len(c.stalled) != 1 || c.stalled[0] != 4 || len(c.notes[4]) != 1 || c.notes[4][0] != ErrNoAnswer {
			t.Fatalf("stalled %v, node 4 noted %v", c.stalled, c.notes[4])
		}
	})
}

// Stragglers: once a majority replied, the rest get as long again as the
// replies took, at least the floor, and are then presumed silent and
// noted so.
func TestCollectStragglers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := newFakeNodes(map[int]time.Duration{0: time.Millisecond, 1: time.Millisecond, 2: 20 * time.Millisecond})
		c := newFakeCaller()
		defer nodes.end()
		r := start(c, nodes, time.Second)
		defer r.Close()
		began := time.Now()
		tl := NewTally(5)
		if err := r.Collect(&tl, Rules{Stragglers: 10 * time.Millisecond}, tl.CountHeld); err != nil {
			t.Fatal(err)
		}
		// A majority at 20 ms: the others until 40 ms (twice the replies').
		if d := time.Since(began); d != 40*time.Millisecond {
			t.Fatalf("stopped after %s, want 40ms", d)
		}
		if tl.Granted != 3 || tl.Failed != 2 || !errors.Is(tl.Failures[0], ErrPresumedSilent) || c.notes[4][0] != ErrPresumedSilent {
			t.Fatalf("tally %+v, node 4 noted %v", tl, c.notes[4])
		}
	})
}

// Failing nodes are not awaited once a majority replied and only they are
// left; they are not presumed failing before that.
func TestCollectSkipsFailingNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := newFakeNodes(map[int]time.Duration{0: time.Millisecond, 1: time.Millisecond, 2: 5 * time.Millisecond})
		defer nodes.end()
		r := start(newFakeCaller(2, 3, 4), nodes, time.Second)
		defer r.Close()
		began := time.Now()
		tl := NewTally(5)
		if err := r.Collect(&tl, Rules{}, tl.CountHeld); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d != 5*time.Millisecond {
			t.Fatalf("stopped after %s, want 5ms (node 2 failing but answering)", d)
		}
		if tl.Granted != 3 || tl.Failed != 2 || !errors.Is(tl.Failures[0], ErrFailing) {
			t.Fatalf("tally %+v", tl)
		}
	})
}

// A panic in a node's call is that node's failure, through the caller.
func TestPanicIsANodeFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFakeCaller()
		var wg sync.WaitGroup
		r := Start(c, Ask{Op: "release", Parent: context.Background()}, 3, []int{0, 1, 2}, time.Second, &wg, func(ctx context.Context, i int) (bool, error) {
			if i == 1 {
				panic("boom")
			}
			return true, nil
		})
		tl := NewTally(3)
		_ = r.Collect(&tl, Rules{}, tl.CountHeld)
		r.Close()
		wg.Wait()
		if tl.Granted != 2 || tl.Failed != 1 || c.panics != 1 || c.reported != 3 {
			t.Fatalf("tally %+v, %d panics, %d reported", tl, c.panics, c.reported)
		}
		if got := tl.Failures[0].Error(); got != "node 1: release: panicked: panic: boom" {
			t.Fatalf("failure %q", got)
		}
	})
}

// CollectWithin reads what comes within d, when d ends before the stall
// guard, and until the guard otherwise.
func TestCollectWithin(t *testing.T) {
	for _, tc := range []struct {
		d, took time.Duration
		answers int
	}{
		{d: 5 * time.Millisecond, took: 5 * time.Millisecond, answers: 2},
		{d: time.Hour, took: time.Second + StallGrace, answers: 5}, // 3 answers, 2 silent
	} {
		synctest.Test(t, func(t *testing.T) {
			nodes := newFakeNodes(map[int]time.Duration{0: time.Millisecond, 1: 3 * time.Millisecond, 2: 10 * time.Millisecond})
			defer nodes.end()
			r := start(newFakeCaller(), nodes, time.Second)
			defer r.Close()
			began := time.Now()
			n := 0
			r.CollectWithin(tc.d, func(Answer[bool]) error { n++; return nil }, false)
			if d := time.Since(began); d != tc.took || n != tc.answers {
				t.Fatalf("within %s: %d answers in %s, want %d in %s", tc.d, n, d, tc.answers, tc.took)
			}
		})
	}
}
