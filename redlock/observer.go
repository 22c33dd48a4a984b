package redlock

import (
	"context"
	"errors"
	"time"
)

// EventKind names what an Event reports.
type EventKind int

const (
	// EventAttempt: one acquisition attempt is about to fan out; Attempts
	// is its number in the call (1 for the first).
	EventAttempt EventKind = iota + 1
	// EventAcquired: the call acquired the lock. Attempts, Fence, and
	// Latency from the start of the call. Reason is "took_over" when the
	// lock took over from a holder that never released it (Lock.TookOver
	// reports it, with the same limits), else empty.
	EventAcquired
	// EventContended: an attempt lost. Reason "contended" (another client
	// holds a majority) or "split_vote" (no client holds a majority).
	EventContended
	// EventNotAcquired: the call gave up. Attempts, Latency, Err, and
	// Reason: "contended" (another client held the lock when the retries
	// ran out), "split_vote" (the split-vote rounds ran out),
	// "quorum_unreachable", "canceled" (the caller's context ended),
	// "expired" (validity used up while acquiring: nodes too slow for the
	// TTL), "invalid" (a node found misconfigured, ErrInvalidArgument),
	// "recovering" (nodes that lost their data for the key sat out, see
	// WithRecoveryPeriod).
	EventNotAcquired
	// EventExtended: an extension round for the lock finished. Err is nil
	// when a majority confirmed; otherwise it wraps ErrQuorumUnreachable,
	// Reason is "quorum_unreachable" and the lock stays valid. An
	// extension that finds the lock lost reports EventLost instead.
	EventExtended
	// EventReleased: a release reached a majority and ended the lock.
	EventReleased
	// EventLost: the lock ended without a release. Err wraps ErrLockLost;
	// Reason: "expired" (its validity ran out before an extension or a
	// release), "not_ours" (too few nodes still hold our token),
	// "unconfirmed" (a majority did not confirm an extension before the
	// validity ended), "extension_failed" (auto-extension could not
	// extend it in time), "max_hold" (the extend.WithMaxHold cap).
	EventLost
	// EventKept: auto-extension started (Reason "start": KeepAlive, Do,
	// TryDo, Hold) or stopped (Reason "stop": stop, Release, or loss).
	EventKept
	// EventNode: one node answered one request of a quorum round. Node,
	// Op ("acquire", "extend", "release", "fence", "identify"), Latency;
	// Err is nil, or the node's failure. A node whose yes did not count
	// because it lost its data for the key is reported once more after the
	// round, with Reason "recovering" and a *RecoveringError.
	EventNode
)

var eventNames = map[EventKind]string{
	EventAttempt: "attempt", EventAcquired: "acquired", EventContended: "contended",
	EventNotAcquired: "not_acquired", EventExtended: "extended", EventReleased: "released",
	EventLost: "lost", EventKept: "kept", EventNode: "node",
}

func (k EventKind) String() string {
	if s, ok := eventNames[k]; ok {
		return s
	}
	return "unknown"
}

// Event is one thing that happened to a lock, for metrics and tracing.
//
// The events balance, so that gauges can be kept from them: a call that
// made an attempt ends with exactly one EventAcquired or EventNotAcquired;
// a lock reported by EventAcquired ends with exactly one EventReleased or
// EventLost; an EventKept "start" is followed by exactly one "stop".
// Reason is a short snake_case word from the lists on the kinds (empty for
// the other kinds), ready to be a metric label value.
type Event struct {
	Kind     EventKind
	Key      string        // the lock key as the caller named it (no prefix)
	Reason   string        // why, for the kinds that list reasons
	Node     string        // EventNode: the node's name
	Op       string        // EventNode: the operation
	Attempts int           // EventAttempt, EventAcquired, EventNotAcquired
	Fence    uint64        // EventAcquired
	Latency  time.Duration // time the operation took
	Err      error         // EventNotAcquired, EventLost, failed EventExtended and EventNode
	// Context is the context of the call the event belongs to (Acquire,
	// Extend, Release), for tracing adapters; context.Background() for
	// the watchdog's and the background cleanup's events.
	Context context.Context
}

// Observer receives events synchronously, on the caller's goroutine or,
// for EventNode and the watchdog's events, on the client's own goroutines,
// possibly concurrently: it must be fast, safe for concurrent use, and must
// not call back into the Client. It is the hook for metrics and tracing
// (the promlock and otellock modules).
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe implements Observer.
func (f ObserverFunc) Observe(e Event) { f(e) }

// Reasons (Event.Reason).
const (
	reasonContended   = "contended"
	reasonSplitVote   = "split_vote"
	reasonNoQuorum    = "quorum_unreachable"
	reasonCanceled    = "canceled"
	reasonExpired     = "expired"
	reasonInvalid     = "invalid"
	reasonNotOurs     = "not_ours"
	reasonUnconfirmed = "unconfirmed"
	reasonExtendFail  = "extension_failed"
	reasonMaxHold     = "max_hold"
	reasonTookOver    = "took_over"
)

// reason says why an attempt that got no lock failed.
func (o outcome) reason() string {
	switch {
	case o.split:
		return reasonSplitVote
	case o.held:
		return reasonContended
	case errors.Is(o.err, ErrQuorumUnreachable):
		return reasonNoQuorum
	case errors.Is(o.err, ErrInvalidArgument):
		return reasonInvalid
	case errors.As(o.err, new(*RecoveringError)):
		return reasonRecovering
	}
	return reasonExpired // validity used up while acquiring or settling the fence
}

func (c *Client) observe(e Event) {
	if c.cfg.observer != nil {
		if e.Context == nil {
			e.Context = context.Background()
		}
		c.cfg.observer.Observe(e)
	}
}

// observeNode reports one node's answer in a round.
func (c *Client) observeNode(ctx context.Context, key string, i int, op string, err error, took time.Duration) {
	if c.cfg.observer != nil {
		c.observe(Event{Kind: EventNode, Key: key, Node: c.nodes[i].Name(), Op: op, Latency: took, Err: err, Context: ctx})
	}
}
