package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/internal/guard"
	"github.com/quorumlock/quorumlock/node"
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
	for _, i := range nodes {
		r.waiting[i] = true
		c.bg.Add(1) // Close waits for requests still in flight
		go func() {
			defer c.bg.Done()
			began := time.Now()
			v, err := guard.Call(func() (T, error) { return call(ctx, i) })
			err = c.panicked(op, key, i, err)
			took := time.Since(began)
			c.noteAnswer(parent, op, i, err, timeout)
			r.answers <- answer[T]{node: i, val: v, err: err}
			r.answered()
			c.observeNode(parent, key, i, op, err, took) // after the answer: off the decision's path
		}()
	}
	r.stall, r.stallAt = time.NewTimer(timeout+stallGrace), time.Now().Add(timeout+stallGrace)
	r.stalled, r.done = r.stall.C, parent.Done()
	return r
}

// panicked turns a panic recovered from node i's call into that node's
// failure, ErrNodePanic, and logs the panic's value and stack; other errors
// pass unchanged.
func (c *Client) panicked(op, key string, i int, err error) error {
	if err == nil { // the usual case, without errors.As's allocation
		return nil
	}
	var pe *guard.PanicError
	if !errors.As(err, &pe) {
		return err
	}
	guard.Log(c.logger, "redlock: node call", err, "node", c.nodes[i].Name(), "op", op, "key", key)
	return fmt.Errorf("%w: %w", ErrNodePanic, err)
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
				r.c.noteAnswer(r.parent, r.op, i, errNoAnswer, time.Since(r.start))
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
		a.err = r.c.nodeError(r.parent, r.key, r.c.nodes[a.node], r.op, a.err)
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
// health.go) and returns them as failures.
func (r *round[T]) presumeFailing() []error {
	var out []error
	for i, w := range r.waiting {
		if w && r.c.failing(i) {
			r.waiting[i] = false
			r.pending--
			out = append(out, r.c.nodeError(r.parent, r.key, r.c.nodes[i], r.op, errFailing))
		}
	}
	return out
}

// onlyFailingLeft reports whether the round may stop waiting for the nodes
// still waited for: every one of them is failing (see health.go), and the
// nodes that replied are a majority, so presuming the failing ones failed
// never turns a call into ErrQuorumUnreachable by itself.
func (r *round[T]) onlyFailingLeft() bool {
	return r.pending > 0 && r.failingPending() == r.pending && r.replies >= r.c.quorum
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
			r.c.noteAnswer(r.parent, r.op, i, errPresumedSilent, 0)
			r.waiting[i] = false
			r.pending--
			out = append(out, r.c.nodeError(r.parent, r.key, r.c.nodes[i], r.op, errPresumedSilent))
		}
	}
	return out
}

// failingPending counts the nodes still waited for that are failing.
func (r *round[T]) failingPending() int {
	n := 0
	for i, w := range r.waiting {
		if w && r.c.failing(i) {
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
