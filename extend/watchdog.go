package extend

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
)

// Lease is what the watchdog keeps alive. ValidUntil is read often and must
// be cheap and safe for concurrent use; the renew function moves it forward.
type Lease interface {
	// ValidUntil is the instant (monotonic clock) after which the lease may
	// belong to someone else.
	ValidUntil() time.Time
	// TTL is the lease's time to live; the defaults of the threshold,
	// safety margin and retry interval derive from it.
	TTL() time.Duration
}

// Renew renews leases: the watchdog calls it with every lease due in one
// tick, from one goroutine per round; rounds for disjoint sets of leases may
// overlap when a round outlasts a tick, but a lease is never in two rounds
// at once. It returns one error per lease, in order: nil when the lease was
// renewed (its ValidUntil moved forward). Any error is retried after the
// retry interval while the validity lasts; a renew function that knows a
// lease is gone for good should also move its ValidUntil to the past, and
// the watchdog then declares it lost at once with that error. ctx ends at
// the latest ValidUntil of the round.
type Renew[L Lease] func(ctx context.Context, leases []L) []error

var (
	// ErrLost is the cause given to onLost when a lease could not be
	// renewed and its validity is about to end (within the safety margin).
	// The last renewal error, if any, is wrapped too.
	ErrLost = errors.New("extend: lease could not be renewed")
	// ErrMaxHold is the cause given to onLost when the lease reached the
	// cap set by WithMaxHold.
	ErrMaxHold = errors.New("extend: maximum hold time reached")
)

// Watchdog keeps leases alive. It runs one goroutine while it has leases
// (none when idle) plus one per renewal round in flight. It is safe for
// concurrent use; the zero value is not usable, call New.
type Watchdog[L Lease] struct {
	renew Renew[L]
	cfg   config
	log   *slog.Logger

	mu        sync.Mutex
	queue     queue[L] // every kept lease, by when to look at it again
	inflight  int      // rounds in flight
	running   bool     // the loop goroutine is alive
	lastRound time.Time
	wake      chan struct{}
}

type entry[L Lease] struct {
	lease   L
	onLost  func(error)
	since   time.Time
	retryAt time.Time // after a failed renewal: not before
	lastErr error
	round   *round    // the round in flight for this lease, if any (guarded by Watchdog.mu)
	at      time.Time // when the watchdog looks at it again (guarded by Watchdog.mu)
	index   int       // in Watchdog.queue, -1 once out (guarded by Watchdog.mu)

	cbMu    sync.Mutex // serializes onLost with stop
	stopped bool       // stop was called or onLost was called
}

type round struct{ finished chan struct{} }

// New returns a Watchdog that renews through renew. See the package
// documentation for the defaults of the options.
func New[L Lease](renew Renew[L], opts ...Option) (*Watchdog[L], error) {
	if renew == nil {
		return nil, fmt.Errorf("%w: nil renew function", ErrInvalidOption)
	}
	cfg := config{tick: DefaultTick}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watchdog[L]{renew: renew, cfg: cfg, log: log, wake: make(chan struct{}, 1)}, nil
}

// Threshold is how much validity a lease of this ttl has left when its
// extension is due (see SafetyMargin and RetryInterval for the others).
func (w *Watchdog[L]) Threshold(ttl time.Duration) time.Duration { return w.cfg.thresholdFor(ttl) }

// SafetyMargin is how long before its validity ends a lease of this ttl
// is declared lost.
func (w *Watchdog[L]) SafetyMargin(ttl time.Duration) time.Duration { return w.cfg.marginFor(ttl) }

// RetryInterval is how soon a failed extension of a lease of this ttl is
// tried again.
func (w *Watchdog[L]) RetryInterval(ttl time.Duration) time.Duration { return w.cfg.retryFor(ttl) }

// Len is the number of leases being kept.
func (w *Watchdog[L]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// Keep renews l until stop is called or the lease is lost. onLost (may be
// nil) is called at most once, from the watchdog's goroutine, when the lease
// could not be renewed and less than the safety margin of its validity is
// left (cause wraps ErrLost), or when the max-hold cap is reached (cause
// wraps ErrMaxHold); it must be quick and must not call stop.
//
// stop returns only when no renewal of l is in flight, and after it returns
// neither a renewal of l nor onLost starts. It may be called more than once
// and after loss.
func (w *Watchdog[L]) Keep(l L, onLost func(error)) (stop func()) {
	now := time.Now()
	e := &entry[L]{lease: l, onLost: onLost, since: now, index: -1}
	w.mu.Lock()
	w.queue.schedule(e, now)
	if !w.running {
		w.running = true
		// Not guarded: the loop reads no node (renew, which does, runs
		// guarded in w.run), and a panic in it would leave w.mu held, so
		// recovering would turn a crash into a hang.
		go w.loop()
	}
	w.mu.Unlock()
	w.poke()
	var once sync.Once
	return func() { once.Do(func() { w.stop(e) }) }
}

func (w *Watchdog[L]) stop(e *entry[L]) {
	w.mu.Lock()
	w.queue.remove(e)
	r := e.round
	empty := len(w.queue) == 0
	w.mu.Unlock()
	e.cbMu.Lock()
	e.stopped = true
	e.cbMu.Unlock()
	if r != nil {
		<-r.finished
	}
	if empty {
		w.poke() // let an idle loop exit now rather than at its next timer
	}
}

func (w *Watchdog[L]) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Watchdog[L]) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait, ok := w.scan()
		if !ok {
			return
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-w.wake:
		}
	}
}

type loss[L Lease] struct {
	e   *entry[L]
	err error
}

// scan declares lost leases, starts a round for the leases due before the
// next tick (at most one round per tick), and says how long to sleep. It
// visits only the leases whose time to be looked at has come, or comes
// within the tick when a round may start (see look). It reports false when
// there is nothing left to watch (the loop then exits).
func (w *Watchdog[L]) scan() (time.Duration, bool) {
	now := time.Now()
	w.mu.Lock()
	if len(w.queue) == 0 && w.inflight == 0 {
		w.running = false
		w.mu.Unlock()
		return 0, false
	}
	nextRound := w.lastRound.Add(w.cfg.tick)
	roundOK := !now.Before(nextRound)
	limit := now
	if roundOK {
		limit = now.Add(w.cfg.tick)
	}
	var (
		due, later []*entry[L]
		lost       []loss[L]
	)
	for len(w.queue) > 0 && !w.queue[0].at.After(limit) {
		e := heap.Pop(&w.queue).(*entry[L])
		at, isDue, err := w.look(e, now, roundOK, nextRound)
		if err != nil {
			lost = append(lost, loss[L]{e, err})
			continue
		}
		if isDue {
			due = append(due, e)
		}
		e.at = at
		later = append(later, e) // after the loop: at may be before limit
	}
	for _, e := range later {
		heap.Push(&w.queue, e)
	}
	var r *round
	if len(due) > 0 {
		r = &round{finished: make(chan struct{})}
		for _, e := range due {
			e.round = r
		}
		w.inflight++
		w.lastRound = now
	}
	wait := time.Hour
	if at, ok := w.queue.next(); ok {
		wait = at.Sub(now)
	}
	w.mu.Unlock()
	if r != nil {
		go w.run(r, due)
	}
	for _, l := range lost {
		w.declare(l.e, l.err)
	}
	return max(wait, 0), true
}

// look decides, at now, what becomes of e: lost (err), due in the round
// starting now (its renewal falls within the tick), or neither; and when to
// look at it again (always after now): at its loss or max-hold instant and,
// outside a round, at its renewal (or the next round, if one ran less than a
// tick ago).
func (w *Watchdog[L]) look(e *entry[L], now time.Time, roundOK bool, nextRound time.Time) (at time.Time, due bool, err error) {
	ttl, vu := e.lease.TTL(), e.lease.ValidUntil()
	at = now.Add(time.Hour)
	if w.cfg.maxHold > 0 {
		capAt := e.since.Add(w.cfg.maxHold)
		if !now.Before(capAt) {
			return at, false, fmt.Errorf("%w: held %s", ErrMaxHold, now.Sub(e.since))
		}
		at = earliest(at, capAt)
	}
	margin := w.cfg.marginFor(ttl)
	lossAt := vu.Add(-margin)
	if !now.Before(lossAt) {
		err := fmt.Errorf("%w: %s of validity left, under the safety margin %s", ErrLost, max(vu.Sub(now), 0), margin)
		if e.lastErr != nil {
			err = fmt.Errorf("%w; last renewal: %w", err, e.lastErr)
		}
		return at, false, err
	}
	at = earliest(at, lossAt)
	if e.round != nil {
		return at, false, nil
	}
	dueAt := vu.Add(-w.cfg.thresholdFor(ttl))
	if e.retryAt.After(dueAt) {
		dueAt = e.retryAt
	}
	switch {
	case dueAt.After(now.Add(w.cfg.tick)):
		return earliest(at, dueAt), false, nil
	case roundOK:
		return at, true, nil
	default:
		return earliest(at, nextRound), false, nil
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// run is one renewal round.
func (w *Watchdog[L]) run(r *round, due []*entry[L]) {
	leases := make([]L, len(due))
	var deadline time.Time
	for i, e := range due {
		leases[i] = e.lease
		deadline = latest(deadline, e.lease.ValidUntil())
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	errs := w.renewGuarded(ctx, leases)
	cancel()
	now := time.Now()
	failed := 0
	var sample error
	w.mu.Lock()
	for i, e := range due {
		e.round = nil
		if e.index >= 0 { // still kept: look at it again now
			w.queue.schedule(e, now)
		}
		err := errMissing
		if i < len(errs) {
			err = errs[i]
		}
		if err != nil {
			failed++
			sample = err
			e.lastErr, e.retryAt = err, now.Add(w.cfg.retryFor(e.lease.TTL()))
		} else {
			e.lastErr, e.retryAt = nil, time.Time{}
		}
	}
	w.inflight--
	w.mu.Unlock()
	close(r.finished)
	w.poke()
	if failed > 0 {
		w.log.Debug("extend: renewals failed", "failed", failed, "of", len(due), "err", sample)
	}
}

// renewGuarded is w.renew with a panic (a lease store's client that could
// not decode a reply, say) turned into every lease's renewal error: the
// leases are retried like after any failed renewal.
func (w *Watchdog[L]) renewGuarded(ctx context.Context, leases []L) []error {
	errs, err := guard.Call(func() ([]error, error) { return w.renew(ctx, leases), nil })
	if err == nil {
		return errs
	}
	guard.Log(w.log, "extend: renew", err)
	errs = make([]error, len(leases))
	for i := range errs {
		errs[i] = fmt.Errorf("extend: renew panicked: %w", err)
	}
	return errs
}

var errMissing = errors.New("extend: the renew function returned no result for this lease")

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// declare calls onLost once, unless stop got there first.
func (w *Watchdog[L]) declare(e *entry[L], err error) {
	e.cbMu.Lock()
	defer e.cbMu.Unlock()
	if e.stopped {
		return
	}
	e.stopped = true
	w.log.Warn("extend: lease lost", "err", err)
	if e.onLost != nil {
		e.onLost(err)
	}
}
