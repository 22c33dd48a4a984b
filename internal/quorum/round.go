package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
)

// A round is the one mechanism behind every operation of a client: acquire,
// the undo of a failed attempt, extend, release, the watchdog's renewals and
// the fence settle. It sends one request to each of a set of nodes at once,
// under one deadline, and the caller reads answers until it has decided
// (Collect); it never waits for more than it needs. Answers it did not read
// are dropped (the channel is buffered, so no node goroutine blocks), and
// the requests still in flight are not cancelled when the caller returns:
// cancelling them would make a Redis client drop the connection, and a late
// release must still delete.

// Caller is what a round needs of the client that runs it, which owns its
// nodes' health, their errors, its log and its observer.
type Caller interface {
	// Failing reports whether node i is failing: its answer is not awaited
	// once a majority replied and only failing nodes are left (Collect).
	Failing(i int) bool
	// Note records node i's answer to a request of a (err nil), or its
	// failure: an error, or silence.
	Note(a Ask, i int, err error)
	// Panicked turns a panic recovered from node i's call (a
	// *guard.PanicError) into that node's failure.
	Panicked(a Ask, i int, err error) error
	// NodeError turns node i's failure into the error its Answer carries.
	NodeError(a Ask, i int, err error) error
	// Report tells of node i's answer (err nil) or failure, which its call
	// took; it runs after the round got the answer, off the decision's path.
	Report(a Ask, i int, err error, took time.Duration)
	// StallGuardFired tells that the round waited for silent nodes as long
	// as it ever does (the node timeout plus StallGrace).
	StallGuardFired(a Ask, silent int)
}

// Ask names a round: which operation asks about which key, under which
// context (the caller's).
type Ask struct {
	Op, Key string
	Parent  context.Context
}

// Group counts the requests in flight, for a client's Close to wait on.
type Group interface {
	Add(delta int)
	Done()
}

// Answer is one node's reply in a round.
type Answer[T any] struct {
	Node int // index among the caller's nodes
	Val  T
	Err  error // the caller's NodeError when not nil
}

// ErrNoAnswer is the failure of a node that did not answer within its
// timeout (plus StallGrace), whatever its client does with deadlines.
var ErrNoAnswer = errors.New("no answer within the node timeout")

// ErrFailing is the failure recorded for a failing node whose answer a
// round did not wait for (Collect).
var ErrFailing = errors.New("failing recently; its answer was not awaited")

// ErrPresumedSilent is the failure recorded for a node that had not
// answered when every other node had and its grace was over (Rules.Stragglers).
var ErrPresumedSilent = errors.New("silent while the other nodes answered; presumed failing")

// StallGrace is how long past its timeout a node's answer is awaited before
// the node counts as silent: the guard against clients that ignore context
// deadlines (go-redis without ContextTimeoutEnabled).
const StallGrace = 50 * time.Millisecond

// Round is one round: its requests in flight and the answers not read yet.
// Only the goroutine that started it reads it.
type Round[T any] struct {
	caller  Caller
	ask     Ask
	n       int // the caller's nodes, in all
	answers chan Answer[T]
	waiting []bool // per node of the caller: asked and not answered yet
	pending int
	stall   *time.Timer
	stalled <-chan time.Time // the stall guard; nil once fired
	stallAt time.Time        // when it fires
	done    <-chan struct{}  // parent's; nil once it ended
	start   time.Time

	replies   int         // answers without error so far
	lastReply time.Time   // when the last of them came
	grace     *time.Timer // see stragglersDue; nil until used

	// One timeout context for every request of the round: the last
	// request to finish releases its timer.
	outstanding atomic.Int32
	cancel      context.CancelFunc
}

// Start asks each of nodes (indexes among the caller's n nodes) with call,
// under one timeout, and under a's parent context; inFlight counts each
// request until it is done. Close the round once its caller has decided.
func Start[T any](caller Caller, a Ask, n int, nodes []int, timeout time.Duration, inFlight Group, call func(ctx context.Context, i int) (T, error)) *Round[T] {
	r := &Round[T]{
		caller: caller, ask: a, n: n,
		// Room for every node's own answer and for the failure giveUp
		// may report in its place: no sender ever blocks.
		answers: make(chan Answer[T], 2*len(nodes)),
		waiting: make([]bool, n),
		pending: len(nodes),
		start:   time.Now(),
	}
	ctx, cancel := context.WithTimeout(a.Parent, timeout)
	r.cancel = cancel
	r.outstanding.Store(int32(len(nodes)))
	for _, i := range nodes {
		r.waiting[i] = true
		inFlight.Add(1)
		go func() {
			defer inFlight.Done()
			began := time.Now()
			v, err := guard.Call(func() (T, error) { return call(ctx, i) })
			err = r.panicked(i, err)
			took := time.Since(began)
			caller.Note(a, i, err)
			r.answers <- Answer[T]{Node: i, Val: v, Err: err}
			r.requestDone()
			caller.Report(a, i, err, took) // after the answer: off the decision's path
		}()
	}
	r.stall, r.stallAt = time.NewTimer(timeout+StallGrace), time.Now().Add(timeout+StallGrace)
	r.stalled, r.done = r.stall.C, a.Parent.Done()
	return r
}

// panicked hands a panic recovered from node i's call to the caller;
// other errors pass unchanged.
func (r *Round[T]) panicked(i int, err error) error {
	if err == nil { // the usual case, without errors.As's allocation
		return nil
	}
	var pe *guard.PanicError
	if !errors.As(err, &pe) {
		return err
	}
	return r.caller.Panicked(r.ask, i, err)
}

// requestDone is called once by each request of the round when it is done;
// the last one releases the round's timeout context.
func (r *Round[T]) requestDone() {
	if r.outstanding.Add(-1) == 0 {
		r.cancel()
	}
}

// Close stops the round's timers. Requests still in flight go on.
func (r *Round[T]) Close() {
	r.stall.Stop()
	if r.grace != nil {
		r.grace.Stop()
	}
}

// Next returns the next answer, false when every node has answered. Nodes
// still silent when the stall guard fires or the parent context ends are
// returned one by one as failures (ErrNoAnswer, or with parent's cause).
func (r *Round[T]) Next() (Answer[T], bool) {
	return r.NextBefore(nil)
}

// NextBefore is Next that also gives up (returning false) when stop fires.
func (r *Round[T]) NextBefore(stop <-chan time.Time) (Answer[T], bool) {
	for r.pending > 0 {
		var a Answer[T]
		select {
		case a = <-r.answers:
			if !r.waiting[a.Node] { // already counted as silent
				continue
			}
		case <-r.stalled:
			silent := 0
			for i, w := range r.waiting {
				if w {
					silent++
					r.caller.Note(r.ask, i, ErrNoAnswer)
				}
			}
			r.caller.StallGuardFired(r.ask, silent)
			r.giveUp(ErrNoAnswer)
			continue
		case <-r.done:
			r.giveUp(context.Cause(r.ask.Parent))
			continue
		case <-stop:
			return Answer[T]{}, false
		}
		r.waiting[a.Node] = false
		r.pending--
		if a.Err == nil {
			r.replies++
			r.lastReply = time.Now()
		} else {
			a.Err = r.caller.NodeError(r.ask, a.Node, a.Err)
		}
		return a, true
	}
	return Answer[T]{}, false
}

// giveUp turns every node still waiting into a failed answer, delivered by
// the next calls of Next.
func (r *Round[T]) giveUp(cause error) {
	for i, w := range r.waiting {
		if w {
			// A buffered slot is free for every waiting node: its own
			// goroutine's answer, when it comes, is skipped above.
			err := cause
			if cause != ErrNoAnswer {
				err = fmt.Errorf("%w: %w", ErrNoAnswer, cause)
			}
			r.answers <- Answer[T]{Node: i, Err: fmt.Errorf("%w after %s", err, time.Since(r.start).Round(time.Millisecond))}
		}
	}
	r.stall.Stop()
	r.stalled, r.done = nil, nil // report once
}

// Pending is how many nodes the round still waits for.
func (r *Round[T]) Pending() int { return r.pending }

// FailingPending counts the nodes still waited for that are failing.
func (r *Round[T]) FailingPending() int {
	n := 0
	for i, w := range r.waiting {
		if w && r.caller.Failing(i) {
			n++
		}
	}
	return n
}

// onlyFailingPending reports whether every node still waited for is
// failing: none is likely to answer within a short wait.
func (r *Round[T]) onlyFailingPending() bool {
	return r.pending > 0 && r.FailingPending() == r.pending
}

// onlyFailingLeft reports whether the round may stop waiting for the nodes
// still waited for: every one of them is failing, and the nodes that
// replied are a majority, so presuming the failing ones failed never makes
// a majority unreachable by itself.
func (r *Round[T]) onlyFailingLeft() bool {
	return r.onlyFailingPending() && Reached(r.n, r.replies)
}

// presumeFailing stops waiting for the nodes that are failing and returns
// them as failures.
func (r *Round[T]) presumeFailing() []error {
	var out []error
	for i, w := range r.waiting {
		if w && r.caller.Failing(i) {
			r.waiting[i] = false
			r.pending--
			out = append(out, r.caller.NodeError(r.ask, i, ErrFailing))
		}
	}
	return out
}

// presumeSilent stops waiting for the nodes still waited for, notes them
// failing until they answer (so the next rounds do not wait for them
// either), and returns them as failures.
func (r *Round[T]) presumeSilent() []error {
	var out []error
	for i, w := range r.waiting {
		if w {
			r.caller.Note(r.ask, i, ErrPresumedSilent)
			r.waiting[i] = false
			r.pending--
			out = append(out, r.caller.NodeError(r.ask, i, ErrPresumedSilent))
		}
	}
	return out
}

// Began is when the round started.
func (r *Round[T]) Began() time.Time { return r.start }

// RepliedIn is how long the nodes' replies took: from the round's start to
// the last answer without error (0 before any). Nodes that time out do not
// stretch it, so what scales with it (the split sleeps) stays a few round
// trips when a node is silent.
func (r *Round[T]) RepliedIn() time.Duration {
	if r.replies == 0 {
		return 0
	}
	return r.lastReply.Sub(r.start)
}

// stragglersDue returns a channel, for NextBefore, that fires once the
// nodes still waited for have had as long again as the replies so far took,
// and at least floor, since the round began: ample for a node that is
// merely slower than the others, far shorter than a silent node's timeout.
func (r *Round[T]) stragglersDue(floor time.Duration) <-chan time.Time {
	wait := time.Until(r.start.Add(max(2*r.RepliedIn(), floor)))
	if r.grace == nil {
		r.grace = time.NewTimer(wait)
	} else {
		r.grace.Reset(wait)
	}
	return r.grace.C
}

// Linger replaces the stall guard, once the outcome is decided, by a short
// wait of d for the remaining answers; it returns the channel to pass to
// NextBefore.
func (r *Round[T]) Linger(d time.Duration) <-chan time.Time {
	r.stall.Reset(d)
	r.stalled = nil
	return r.stall.C
}

// Rules are Collect's stopping rules beyond "every node answered".
type Rules struct {
	UntilDecided bool // stop once the tally is decided
	// Stragglers, when not zero: once a majority replied, the nodes still
	// waited for get as long again as the replies took, at least this long
	// (see stragglersDue), and are then presumed silent (ErrPresumedSilent),
	// unless the tally waits for every node (Tally.WaitAll).
	Stragglers time.Duration
}

// Collect reads the round's answers into count (which updates t) until the
// rules say stop, count returns an error (returned), or every node
// answered. It never waits for failing nodes once a majority replied and
// only they are left: they are recorded in t as failures (ErrFailing).
func (r *Round[T]) Collect(t *Tally, rules Rules, count func(Answer[T]) error) error {
	for !rules.UntilDecided || !t.Decided() {
		if r.onlyFailingLeft() {
			t.FailAll(r.presumeFailing())
			return nil
		}
		var stragglers <-chan time.Time
		if rules.Stragglers > 0 && Reached(t.N, r.replies) && !t.WaitAll {
			stragglers = r.stragglersDue(rules.Stragglers)
		}
		a, ok := r.NextBefore(stragglers)
		if !ok {
			t.FailAll(r.presumeSilent()) // none unless the stragglers' wait ran out
			return nil
		}
		if err := count(a); err != nil {
			return err
		}
	}
	return nil
}

// CollectWithin reads the answers that come within d into count, or until
// the stall guard if that comes first. The guard's timer becomes that wait
// (see Linger; no timer of its own): the caller reads no more answers
// after it. With skipFailing it stops early once only failing nodes are
// left, as Collect does.
func (r *Round[T]) CollectWithin(d time.Duration, count func(Answer[T]) error, skipFailing bool) {
	var stop <-chan time.Time
	if r.stalled == nil || d < time.Until(r.stallAt) {
		stop = r.Linger(d)
	}
	for !skipFailing || !r.onlyFailingPending() {
		a, ok := r.NextBefore(stop)
		if !ok {
			return
		}
		_ = count(a)
	}
}
