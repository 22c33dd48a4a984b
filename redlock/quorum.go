package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/observe"
)

// The quorum round is the one mechanism behind every operation: acquire,
// the undo of a failed attempt, extend, release, the watchdog's renewals and
// the fence settle. A round sends one request to each of a set of nodes at
// once, under one deadline, and the caller reads answers until it has
// decided; it never waits for more than it needs. Answers it did not read
// are dropped (the channel is buffered, so no node goroutine blocks), and
// the requests still in flight are not cancelled when the caller returns:
// cancelling them would make go-redis drop the connection, and a late
// release must still delete.

// answer is one node's reply in a round.
type answer[T any] struct {
	node int // index in Client.nodes
	val  T
	err  error // a *NodeError when not nil
}

type round[T any] struct {
	c       *Client
	op, key string
	parent  context.Context
	answers chan answer[T]
	waiting []bool // per node of the client: asked and not answered yet
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

// stallGuardFired is the debug log message of a round whose stall guard
// fired: it waited for silent nodes as long as it ever does.
const stallGuardFired = "redlock: round waited past the node timeout for silent nodes"

// errNoAnswer is the error of a node that did not answer within its
// timeout (plus stallGrace), whatever its client does with deadlines.
var errNoAnswer = errors.New("no answer within the node timeout")

// stallGrace is how long past its timeout a node's answer is awaited before
// the node counts as silent: the guard against clients that ignore context
// deadlines (go-redis without ContextTimeoutEnabled).
const stallGrace = 50 * time.Millisecond

// startRound asks the nodes (indexes into c.nodes; nil: all of them) with
// call, each with timeout, under parent.
func startRound[T any](c *Client, parent context.Context, op, key string, nodes []int, timeout time.Duration, call func(ctx context.Context, n node.Node) (T, error)) *round[T] {
	return startRoundAt(c, parent, op, key, nodes, timeout, func(ctx context.Context, i int) (T, error) { return call(ctx, c.nodes[i]) })
}

// startRoundAt is startRound for calls that need the node's index.
func startRoundAt[T any](c *Client, parent context.Context, op, key string, nodes []int, timeout time.Duration, call func(ctx context.Context, i int) (T, error)) *round[T] {
	if nodes == nil {
		nodes = c.all
	}
	r := &round[T]{
		c: c, op: op, key: key, parent: parent,
		// Room for every node's own answer and for the failure giveUp
		// may report in its place: no sender ever blocks.
		answers: make(chan answer[T], 2*len(nodes)),
		waiting: make([]bool, len(c.nodes)),
		pending: len(nodes),
		start:   time.Now(),
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	r.cancel = cancel
	r.outstanding.Store(int32(len(nodes)))
	inFlight := &c.bg // Close waits for requests still in flight
	if op == opIdentify {
		inFlight = &c.checks // Close cuts these, and waits for them a node timeout at most
	}
	for _, i := range nodes {
		r.waiting[i] = true
		inFlight.Add(1)
		go func() {
			defer inFlight.Done()
			began := time.Now()
			v, err := guard.Call(func() (T, error) { return call(ctx, i) })
			err = r.panicked(i, err)
			took := time.Since(began)
			c.health.note(parent, op, i, err)
			r.answers <- answer[T]{node: i, val: v, err: err}
			r.answered()
			r.reportNode(i, err, took) // after the answer: off the decision's path
		}()
	}
	r.stall, r.stallAt = time.NewTimer(timeout+stallGrace), time.Now().Add(timeout+stallGrace)
	r.stalled, r.done = r.stall.C, parent.Done()
	return r
}

// panicked turns a panic recovered from node i's call into that node's
// failure, ErrNodePanic, and logs the panic's value and stack; other errors
// pass unchanged.
func (r *round[T]) panicked(i int, err error) error {
	if err == nil { // the usual case, without errors.As's allocation
		return nil
	}
	var pe *guard.PanicError
	if !errors.As(err, &pe) {
		return err
	}
	guard.Log(r.c.logger, "redlock: node call", err, "node", r.c.nodes[i].Name(), "op", r.op, "key", r.key)
	return fmt.Errorf("%w: %w", ErrNodePanic, err)
}

// reportNode tells the client's observer of node i's answer.
func (r *round[T]) reportNode(i int, err error, took time.Duration) {
	if r.c.cfg.observer != nil {
		r.c.obs.Observe(observe.Event{Kind: observe.Node, Key: r.key, Node: r.c.nodes[i].Name(), Op: r.op, Latency: took, Err: err, Context: r.parent})
	}
}

// nodeError is node i's failure in the round, logged as a warning.
func (r *round[T]) nodeError(i int, err error) error {
	name := r.c.nodes[i].Name()
	if r.c.logger.Enabled(r.parent, slog.LevelWarn) {
		r.c.logger.WarnContext(r.parent, "redlock: node failed", "node", name, "op", r.op, "key", r.key, "err", err)
	}
	return &NodeError{Node: name, Op: r.op, Err: err}
}

// next returns the next answer, false when every node has answered. Nodes
// still silent when the stall guard fires or parent ends are returned one
// by one as failures (errNoAnswer or parent's cause).
func (r *round[T]) next() (answer[T], bool) {
	return r.nextBefore(nil)
}

// nextBefore is next that also gives up (returning false) when stop fires.
func (r *round[T]) nextBefore(stop <-chan time.Time) (answer[T], bool) {
	if r.pending == 0 {
		return answer[T]{}, false
	}
	var a answer[T]
	select {
	case a = <-r.answers:
		if !r.waiting[a.node] { // already counted as silent
			return r.nextBefore(stop)
		}
	case <-r.stalled:
		silent := 0
		for i, w := range r.waiting {
			if w {
				silent++
				r.c.health.note(r.parent, r.op, i, errNoAnswer)
			}
		}
		r.c.logger.DebugContext(r.parent, stallGuardFired, "op", r.op, "key", r.key, "nodes", silent)
		r.giveUp(errNoAnswer)
		return r.nextBefore(stop)
	case <-r.done:
		r.giveUp(context.Cause(r.parent))
		return r.nextBefore(stop)
	case <-stop:
		return answer[T]{}, false
	}
	r.waiting[a.node] = false
	r.pending--
	if a.err == nil {
		r.replies++
		r.lastReply = time.Now()
	} else {
		a.err = r.nodeError(a.node, a.err)
	}
	return a, true
}

// giveUp turns every node still waiting into a failed answer, delivered by
// the next calls of next.
func (r *round[T]) giveUp(cause error) {
	for i, w := range r.waiting {
		if w {
			// A buffered slot is free for every waiting node: its own
			// goroutine's answer, when it comes, is skipped above.
			err := cause
			if cause != errNoAnswer {
				err = fmt.Errorf("%w: %w", errNoAnswer, cause)
			}
			r.answers <- answer[T]{node: i, err: fmt.Errorf("%w after %s", err, time.Since(r.start).Round(time.Millisecond))}
		}
	}
	r.stall.Stop()
	r.stalled, r.done = nil, nil // report once
}

// presumeFailing stops waiting for the nodes that are failing (see
// nodes.go) and returns them as failures.
func (r *round[T]) presumeFailing() []error {
	var out []error
	for i, w := range r.waiting {
		if w && r.c.health.failing(i) {
			r.waiting[i] = false
			r.pending--
			out = append(out, r.nodeError(i, errFailing))
		}
	}
	return out
}

// onlyFailingLeft reports whether the round may stop waiting for the nodes
// still waited for: every one of them is failing (see nodes.go), and the
// nodes that replied are a majority, so presuming the failing ones failed
// never turns a call into ErrQuorumUnreachable by itself.
func (r *round[T]) onlyFailingLeft() bool {
	return r.onlyFailingPending() && quorum.Reached(len(r.c.nodes), r.replies)
}

// onlyFailingPending reports whether every node still waited for is
// failing (see nodes.go): none is likely to answer within a short wait.
func (r *round[T]) onlyFailingPending() bool {
	return r.pending > 0 && r.failingPending() == r.pending
}

// repliedIn is how long the nodes' replies took: from the round's start to
// the last answer without error (0 before any). Nodes that time out do not
// stretch it, so what scales with it (the split sleeps) stays a few round
// trips when a node is silent.
func (r *round[T]) repliedIn() time.Duration {
	if r.replies == 0 {
		return 0
	}
	return r.lastReply.Sub(r.start)
}

// stragglersDue returns a channel, for nextBefore, that fires once the
// nodes still waited for have had as long again as the replies so far took,
// and at least floor, since the round began: ample for a node that is
// merely slower than the others, far shorter than a silent node's timeout.
func (r *round[T]) stragglersDue(floor time.Duration) <-chan time.Time {
	wait := time.Until(r.start.Add(max(2*r.repliedIn(), floor)))
	if r.grace == nil {
		r.grace = time.NewTimer(wait)
	} else {
		r.grace.Reset(wait)
	}
	return r.grace.C
}

// errPresumedSilent is the failure recorded for a node that had not
// answered when every other node had and its grace (stragglersDue) was over.
var errPresumedSilent = errors.New("silent while the other nodes answered; presumed failing")

// presumeSilent stops waiting for the nodes still waited for, marks them
// failing until they answer (so the next rounds do not wait for them
// either), and returns them as failures.
func (r *round[T]) presumeSilent() []error {
	var out []error
	for i, w := range r.waiting {
		if w {
			r.c.health.note(r.parent, r.op, i, errPresumedSilent)
			r.waiting[i] = false
			r.pending--
			out = append(out, r.nodeError(i, errPresumedSilent))
		}
	}
	return out
}

// failingPending counts the nodes still waited for that are failing.
func (r *round[T]) failingPending() int {
	n := 0
	for i, w := range r.waiting {
		if w && r.c.health.failing(i) {
			n++
		}
	}
	return n
}

// lingerFor replaces the stall guard, once the outcome is decided, by a
// short wait for the remaining answers; it returns the channel to pass to
// nextBefore.
func (r *round[T]) lingerFor(d time.Duration) <-chan time.Time {
	r.stall.Reset(d)
	r.stalled = nil
	return r.stall.C
}

func (r *round[T]) close() {
	r.stall.Stop()
	if r.grace != nil {
		r.grace.Stop()
	}
}

// answered is called once by each request of the round when it is done;
// the last one releases the round's timeout context.
func (r *round[T]) answered() {
	if r.outstanding.Add(-1) == 0 {
		r.cancel()
	}
}

// tally counts one operation's answers against the quorum: yes, no, and
// failed (an error, silence, or a yes that does not count). Its verdicts are
// internal/quorum's, read from its counts (votes), so "a majority said yes"
// and "a majority can no longer say yes" mean the same everywhere, and
// ErrQuorumUnreachable is built in one place, from the failures it recorded.
type tally struct {
	n, q     int // nodes asked in all, and the quorum of them (quorum.Of(n))
	yes, no  int
	out      int     // yes votes of nodes sitting out (internal/recovery): neither yes nor failures
	waitAll  bool    // learners' yes votes wait for every node's answer (internal/recovery): no stragglers' cut
	failures []error // each a *NodeError
}

// newTally returns a tally of an operation on every node of the client.
func (c *Client) newTally() tally { return tally{n: len(c.nodes), q: c.quorum} }

// fail records a node's failure.
func (t *tally) fail(err error) { t.failures = append(t.failures, err) }

// failAll records failures (presumeFailing's, presumeSilent's).
func (t *tally) failAll(errs []error) { t.failures = append(t.failures, errs...) }

// notCounted records the yes of a node that answered but whose yes does
// not count (it has not said who it is, say), as that node's failure: the
// quorum needs that many other nodes, and the error says why.
func (t *tally) notCounted(name, op string, why error) {
	t.fail(&NodeError{Node: name, Op: op, Err: why})
}

// votes is the tally's counts as internal/quorum reads them.
func (t *tally) votes() quorum.Votes {
	return quorum.Votes{N: t.n, Granted: t.yes, Refused: t.no, Out: t.out, Failed: len(t.failures)}
}

// won reports whether a majority said yes.
func (t *tally) won() bool { return t.votes().Won() }

// beyondReach reports whether a majority can no longer say yes: more nodes
// said no, sat out or failed than a majority can spare.
func (t *tally) beyondReach() bool { return t.votes().CannotWin() }

// decided reports whether more answers cannot change whether a majority
// said yes.
func (t *tally) decided() bool { return t.votes().Decided() }

// unreachable reports whether failures alone leave no majority.
func (t *tally) unreachable() bool { return t.votes().Unreachable() }

// denied reports whether the no's alone leave no majority: in a round that
// asks "is it ours?", the key is not ours, whatever failed besides.
func (t *tally) denied() bool { return t.votes().Denied() }

// missesAMajority reports whether the nodes that answered are too few to
// meet every majority (at most n-q of them): a key held on a majority may
// be on none of them.
func (t *tally) missesAMajority() bool { return t.votes().MissesAMajority() }

// err is the error of an operation (what, e.g. `acquire "k"`) that too many
// nodes failed: it wraps ErrQuorumUnreachable and each node's failure.
func (t *tally) err(what string) error {
	return fmt.Errorf("%w: %s: %d of %d nodes failed: %w", ErrQuorumUnreachable, what, len(t.failures), t.n, t.joined())
}

// joined is the nodes' failures as one error (nil when none).
func (t *tally) joined() error {
	if len(t.failures) == 0 {
		return nil
	}
	return nodeErrors(slices.Clone(t.failures))
}

// nodeErrors are the failures of several nodes, as errors.Join would join
// them but on one line, so that a log line or a program's last words hold
// the whole reason.
type nodeErrors []error

func (e nodeErrors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e nodeErrors) Unwrap() []error { return e }

// countHeld counts an answer to "is it ours?" (a fence raise, a delete): a
// failure, a yes or a no.
func (t *tally) countHeld(a answer[bool]) error {
	switch {
	case a.err != nil:
		t.fail(a.err)
	case a.val:
		t.yes++
	default:
		t.no++
	}
	return nil
}

// collectRules are a round's stopping rules beyond "every node answered".
type collectRules struct {
	untilDecided bool // stop once the tally is decided
	// stragglers, when not zero: once a majority replied, the nodes still
	// waited for get as long again as the replies took, at least this long
	// (see round.stragglersDue), and are then presumed silent.
	stragglers time.Duration
}

// collect reads r's answers into count (which updates t) until the rules
// say stop, count returns an error (returned), or every node answered. It
// never waits for failing nodes once a majority replied and only they are
// left (see onlyFailingLeft): they are recorded as failures.
func (r *round[T]) collect(t *tally, rules collectRules, count func(answer[T]) error) error {
	for !rules.untilDecided || !t.decided() {
		if r.onlyFailingLeft() {
			t.failAll(r.presumeFailing())
			return nil
		}
		var stragglers <-chan time.Time
		if rules.stragglers > 0 && quorum.Reached(t.n, r.replies) && !t.waitAll {
			stragglers = r.stragglersDue(rules.stragglers)
		}
		a, ok := r.nextBefore(stragglers)
		if !ok {
			t.failAll(r.presumeSilent()) // none unless the stragglers' wait ran out
			return nil
		}
		if err := count(a); err != nil {
			return err
		}
	}
	return nil
}
