package extend_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/extend"
)

// lease is a fake extend.Lease.
type lease struct {
	mu  sync.Mutex
	vu  time.Time
	ttl time.Duration
}

func newLease(ttl time.Duration) *lease { return &lease{vu: time.Now().Add(ttl), ttl: ttl} }

func (l *lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.vu
}
func (l *lease) TTL() time.Duration { return l.ttl }
func (l *lease) renew(start time.Time) {
	l.mu.Lock()
	l.vu = start.Add(l.ttl)
	l.mu.Unlock()
}

// renewer is a fake renew function: it renews every lease unless fail says no, and
// records each call.
type renewer struct {
	mu    sync.Mutex
	calls []call
	fail  func(n int) error // n: index of the call; nil error renews
	delay time.Duration     // how long a round takes
}

type call struct {
	at     time.Time
	leases int
	left   []time.Duration // remaining validity of each lease at the call
}

func (r *renewer) Renew(ctx context.Context, ls []*lease) []error {
	start := time.Now()
	c := call{at: start, leases: len(ls)}
	for _, l := range ls {
		c.left = append(c.left, l.ValidUntil().Sub(start))
	}
	r.mu.Lock()
	n := len(r.calls)
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	errs := make([]error, len(ls))
	var err error
	if r.fail != nil {
		err = r.fail(n)
	}
	for i, l := range ls {
		errs[i] = err
		if err == nil {
			l.renew(start)
		}
	}
	return errs
}

func (r *renewer) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func newWatchdog(t *testing.T, r extend.Renew[*lease], opts ...extend.Option) *extend.Watchdog[*lease] {
	t.Helper()
	w, err := extend.New(r, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The lease is renewed once less than the threshold (max(500ms, ttl/3) = 1s
// for a 3s TTL) is left, at most one tick early, and never lost.
func TestWatchdogRenewsBeforeThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{}
		w := newWatchdog(t, r.Renew)
		l := newLease(3 * time.Second)
		lost := make(chan error, 1)
		stop := w.Keep(l, func(err error) { lost <- err })
		time.Sleep(10 * time.Second)
		stop()
		threshold := w.Threshold(l.ttl)
		if threshold != time.Second {
			t.Fatalf("default threshold for 3s = %s, want 1s", threshold)
		}
		calls := r.snapshot()
		if len(calls) < 4 {
			t.Fatalf("%d renewals in 10s of a 3s lease, want >= 4", len(calls))
		}
		for _, c := range calls {
			if left := c.left[0]; left > threshold || left < threshold-extend.DefaultTick {
				t.Fatalf("renewed with %s left, want within one tick under the threshold %s", left, threshold)
			}
		}
		select {
		case err := <-lost:
			t.Fatalf("lost: %v", err)
		default:
		}
	})
}

// A failed renewal is retried after the retry interval, not at the next
// threshold crossing, and the lease survives.
func TestWatchdogRetriesFailedRenewalQuickly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{fail: func(n int) error {
			if n < 2 {
				return errors.New("node down")
			}
			return nil
		}}
		w := newWatchdog(t, r.Renew)
		l := newLease(3 * time.Second)
		var lost atomic.Bool
		stop := w.Keep(l, func(error) { lost.Store(true) })
		time.Sleep(3 * time.Second)
		stop()
		calls := r.snapshot()
		if len(calls) < 3 {
			t.Fatalf("%d calls, want 2 failures and a success", len(calls))
		}
		retry := w.RetryInterval(l.ttl)
		for i := 1; i < 3; i++ {
			if gap := calls[i].at.Sub(calls[i-1].at); gap != retry {
				t.Fatalf("retry %d came %s after the failure, want the retry interval %s", i, gap, retry)
			}
		}
		if lost.Load() {
			t.Fatal("declared lost although the third try renewed it")
		}
	})
}

// A lease that cannot be renewed is declared lost exactly a safety margin
// before its validity ends, with ErrLost and the last error.
func TestWatchdogDeclaresLossBeforeValidityEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := errors.New("quorum unreachable")
		r := &renewer{fail: func(int) error { return down }}
		w := newWatchdog(t, r.Renew)
		l := newLease(3 * time.Second)
		type lostAt struct {
			at  time.Time
			err error
		}
		lost := make(chan lostAt, 1)
		stop := w.Keep(l, func(err error) { lost <- lostAt{time.Now(), err} })
		defer stop()
		got := <-lost
		margin := w.SafetyMargin(l.ttl)
		if want := l.ValidUntil().Add(-margin); !got.at.Equal(want) {
			t.Fatalf("lost at %s before the end of validity, want the safety margin %s", l.ValidUntil().Sub(got.at), margin)
		}
		if !errors.Is(got.err, extend.ErrLost) || !errors.Is(got.err, down) {
			t.Fatalf("cause %v, want ErrLost wrapping the last renewal error", got.err)
		}
		if n := len(r.snapshot()); n < 3 {
			t.Fatalf("only %d tries before giving up", n)
		}
		if w.Len() != 0 {
			t.Fatal("lost lease still watched")
		}
	})
}

// A renew function that knows the lease is gone moves its validity to the past: the
// loss is declared at once, not at the end of the old validity.
func TestWatchdogLossReportedByRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gone := errors.New("not ours")
		var l *lease
		r := extend.Renew[*lease](func(_ context.Context, ls []*lease) []error {
			l.mu.Lock()
			l.vu = time.Now()
			l.mu.Unlock()
			return []error{gone}
		})
		w := newWatchdog(t, r)
		l = newLease(3 * time.Second)
		start := time.Now()
		lost := make(chan error, 1)
		stop := w.Keep(l, func(err error) { lost <- err })
		defer stop()
		err := <-lost
		if took := time.Since(start); took != 2*time.Second {
			t.Fatalf("declared %s after keep, want at the first renewal (2s)", took)
		}
		if !errors.Is(err, gone) {
			t.Fatalf("cause %v, want the renew function's error", err)
		}
	})
}

// stop waits for a renewal in flight, and nothing is renewed after it.
func TestWatchdogNoRenewalAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{delay: 300 * time.Millisecond}
		w := newWatchdog(t, r.Renew)
		l := newLease(3 * time.Second)
		var lost atomic.Bool
		stop := w.Keep(l, func(error) { lost.Store(true) })
		time.Sleep(2*time.Second + 100*time.Millisecond) // the first round is in flight
		if n := len(r.snapshot()); n != 1 {
			t.Fatalf("%d rounds started, want 1 in flight", n)
		}
		before := l.ValidUntil()
		stop()
		if took := time.Since(r.snapshot()[0].at); took != r.delay {
			t.Fatalf("stop returned %s into a %s round", took, r.delay)
		}
		after := l.ValidUntil()
		if !after.After(before) {
			t.Fatal("the round in flight did not finish before stop returned")
		}
		time.Sleep(20 * time.Second)
		if n := len(r.snapshot()); n != 1 {
			t.Fatalf("%d rounds after stop", n-1)
		}
		if !l.ValidUntil().Equal(after) || lost.Load() {
			t.Fatal("lease changed or reported lost after stop")
		}
	})
}

// stop before any round: the loop goroutine exits (synctest.Test would fail
// on a goroutine left behind) and onLost never runs.
func TestWatchdogStopIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{}
		w := newWatchdog(t, r.Renew)
		stop := w.Keep(newLease(time.Second), func(error) { t.Error("onLost after stop") })
		time.Sleep(100 * time.Millisecond)
		stop()
		stop() // idempotent
		synctest.Wait()
		if len(r.snapshot()) != 0 || w.Len() != 0 {
			t.Fatal("renewed a stopped lease")
		}
	})
}

// The max-hold cap ends a lease that could still be renewed.
func TestWatchdogMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{}
		w := newWatchdog(t, r.Renew, extend.WithMaxHold(7*time.Second))
		l := newLease(3 * time.Second)
		start := time.Now()
		lost := make(chan error, 1)
		stop := w.Keep(l, func(err error) { lost <- err })
		defer stop()
		err := <-lost
		if held := time.Since(start); held != 7*time.Second {
			t.Fatalf("ended after %s, want the cap 7s", held)
		}
		if !errors.Is(err, extend.ErrMaxHold) {
			t.Fatalf("cause %v, want ErrMaxHold", err)
		}
		if len(r.snapshot()) == 0 {
			t.Fatal("never renewed before the cap")
		}
		time.Sleep(10 * time.Second)
		if n := len(r.snapshot()); n != 3 {
			t.Fatalf("%d renewals, want 3 (at 2s, 4s, 6s) and none after the cap", n)
		}
	})
}

// 10,000 leases due in the same tick are renewed by one Renew call per
// round, not one per lease.
func TestWatchdogBatchesLeasesDueInOneTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{}
		w := newWatchdog(t, r.Renew)
		const n = 10000
		var stops []func()
		for i := 0; i < n; i++ {
			// Spread over less than one tick: they all fall due together.
			l := newLease(3 * time.Second)
			stops = append(stops, w.Keep(l, func(err error) { t.Errorf("lost: %v", err) }))
			if i%1000 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(9 * time.Second)
		for _, s := range stops {
			s()
		}
		calls := r.snapshot()
		if len(calls) != 4 { // at 2s, 4s, 6s, 8s
			t.Fatalf("%d Renew calls in 9s, want 4", len(calls))
		}
		for _, c := range calls {
			if c.leases != n {
				t.Fatalf("a round renewed %d leases, want all %d", c.leases, n)
			}
		}
	})
}

// Leases that fall due at scattered times are renewed at most one round per
// tick, and renewing them together lines them up for later rounds.
func TestWatchdogAtMostOneRoundPerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{}
		w := newWatchdog(t, r.Renew)
		var stops []func()
		for i := 0; i < 500; i++ {
			stops = append(stops, w.Keep(newLease(3*time.Second), nil))
			time.Sleep(7 * time.Millisecond) // scattered over 3.5s
		}
		time.Sleep(10 * time.Second)
		for _, s := range stops {
			s()
		}
		calls := r.snapshot()
		for i := 1; i < len(calls); i++ {
			if gap := calls[i].at.Sub(calls[i-1].at); gap < extend.DefaultTick {
				t.Fatalf("rounds %d and %d only %s apart", i-1, i, gap)
			}
		}
		total := 0
		for _, c := range calls {
			total += c.leases
		}
		if total < 500*4 {
			t.Fatalf("%d renewals in total, too few to keep 500 leases for 13.5s", total)
		}
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	r := &renewer{}
	for name, opts := range map[string][]extend.Option{
		"nil option":       {nil},
		"negative margin":  {extend.WithSafetyMargin(-1)},
		"zero tick":        {extend.WithTick(0)},
		"margin>threshold": {extend.WithThreshold(time.Second), extend.WithSafetyMargin(2 * time.Second)},
	} {
		if _, err := extend.New(r.Renew, opts...); !errors.Is(err, extend.ErrInvalidOption) {
			t.Errorf("%s: err = %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := extend.New[*lease](nil); !errors.Is(err, extend.ErrInvalidOption) {
		t.Errorf("nil renewer: err = %v", err)
	}
}

// countingLease counts how often the watchdog reads it.
type countingLease struct {
	*lease
	reads *atomic.Int64
}

func (l countingLease) ValidUntil() time.Time {
	l.reads.Add(1)
	return l.lease.ValidUntil()
}

// Keeping n leases one at a time costs the watchdog a few looks per lease,
// not a look at every kept lease per Keep (n²/2 = 12.5 million reads for
// n = 5,000, and a 100,000-lock service kept that way lost locks: see the
// README's Performance section). Each Keep is let settle before the next,
// so every one wakes the watchdog.
func TestWatchdogKeepCostDoesNotGrowWithLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reads atomic.Int64
		w, err := extend.New(func(ctx context.Context, ls []countingLease) []error {
			return make([]error, len(ls))
		})
		if err != nil {
			t.Fatal(err)
		}
		const n = 5000
		stops := make([]func(), 0, n)
		for range n {
			stops = append(stops, w.Keep(countingLease{newLease(time.Hour), &reads}, nil))
			synctest.Wait()
		}
		if got := reads.Load(); got > 4*n {
			t.Errorf("keeping %d leases read them %d times, want at most %d", n, got, 4*n)
		}
		for _, s := range stops {
			s()
		}
	})
}

// A renewal round that hangs does not delay the loss: the lease in it is
// declared lost the safety margin before its validity ends, while the
// round is still in flight.
func TestWatchdogDeclaresLossDuringAHangingRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &renewer{delay: 10 * time.Second, fail: func(int) error { return errors.New("late") }}
		w := newWatchdog(t, r.Renew)
		l := newLease(3 * time.Second)
		lost := make(chan time.Time, 1)
		stop := w.Keep(l, func(error) { lost <- time.Now() })
		defer stop()
		at := <-lost
		if want := l.ValidUntil().Add(-w.SafetyMargin(l.ttl)); !at.Equal(want) {
			t.Fatalf("lost %s before the end of validity, want the safety margin %s", l.ValidUntil().Sub(at), w.SafetyMargin(l.ttl))
		}
		if c := r.snapshot(); len(c) != 1 || !at.Before(c[0].at.Add(r.delay)) {
			t.Fatalf("rounds %v: want the loss declared while the first round was in flight", c)
		}
	})
}
