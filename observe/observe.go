// Package observe is the vocabulary of the events a redlock.Client reports
// to an Observer (redlock.WithObserver), for metrics and tracing: what
// happened (Kind), to which key, why (Reason), how long it took, and the
// context of the call it belongs to. It sits beside redlock as
// net/http/httptrace sits beside net/http; the promlock and otellock
// modules are Observers.
//
//	o := observe.Func(func(e observe.Event) {
//		if e.Kind == observe.Lost {
//			log.Printf("lost %s: %s", e.Key, e.Reason)
//		}
//	})
//	c, err := redlock.New(nodes, redlock.WithObserver(o))
package observe

import (
	"context"
	"time"
)

// Kind names what an Event reports.
type Kind int

const (
	// Attempt: one acquisition attempt is about to fan out; Attempts
	// is its number in the call (1 for the first).
	Attempt Kind = iota + 1
	// Acquired: the call acquired the lock. Attempts, Fence, and
	// Latency from the start of the call. Reason is "took_over" when the
	// lock took over from a holder that never released it (Lock.TookOver
	// reports it, with the same limits), else empty.
	Acquired
	// Contended: an attempt lost. Reason "contended" (another client
	// holds a majority) or "split_vote" (no client holds a majority).
	Contended
	// NotAcquired: the call gave up. Attempts, Latency, Err, and
	// Reason: "contended" (another client held the lock when the retries
	// ran out), "split_vote" (the split-vote rounds ran out),
	// "quorum_unreachable", "canceled" (the caller's context ended),
	// "expired" (validity used up while acquiring: nodes too slow for the
	// TTL), "invalid" (a node found misconfigured, ErrInvalidArgument),
	// "recovering" (nodes that lost their data for the key sat out, see
	// redlock.WithRecoveryPeriod).
	NotAcquired
	// Extended: an extension round for the lock finished. Err is nil
	// when a majority confirmed; otherwise it wraps ErrQuorumUnreachable,
	// Reason is "quorum_unreachable" and the lock stays valid. An
	// extension that finds the lock lost reports Lost instead.
	Extended
	// Released: a release reached a majority and ended the lock.
	Released
	// Lost: the lock ended without a release. Err wraps ErrLockLost;
	// Reason: "expired" (its validity ran out before an extension or a
	// release), "not_ours" (too few nodes still hold our token),
	// "unconfirmed" (a majority did not confirm an extension before the
	// validity ended), "extension_failed" (auto-extension could not
	// extend it in time), "max_hold" (the extend.WithMaxHold cap).
	Lost
	// Kept: auto-extension started (Reason "start": KeepAlive, Do,
	// TryDo, Hold) or stopped (Reason "stop": stop, Release, or loss).
	Kept
	// Node: one node answered one request of a quorum round. Node,
	// Op ("acquire", "extend", "release", "fence", "identify"), Latency;
	// Err is nil, or the node's failure. A node whose yes did not count
	// because it lost its data for the key is reported once more after the
	// round, with Reason "recovering" and an Err wrapping
	// redlock.ErrRecovering.
	Node
	// UndoFailed: the background undo of a failed attempt (which deletes
	// what the attempt set) did not reach one node: Node, Err (the node's
	// failure, or no answer within the node timeout). The attempt's key
	// may stay on that node until its TTL ends, and until then that node
	// answers "held" for the key. It is reported once per node.
	UndoFailed
)

var names = map[Kind]string{
	Attempt: "attempt", Acquired: "acquired", Contended: "contended",
	NotAcquired: "not_acquired", Extended: "extended", Released: "released",
	Lost: "lost", Kept: "kept", Node: "node", UndoFailed: "undo_failed",
}

func (k Kind) String() string {
	if s, ok := names[k]; ok {
		return s
	}
	return "unknown"
}

// Event is one thing that happened to a lock.
//
// The events balance, so that gauges can be kept from them: a call that
// made an attempt ends with exactly one Acquired or NotAcquired; a lock
// reported by Acquired ends with exactly one Released or Lost; a Kept
// "start" is followed by exactly one "stop". Reason is a short snake_case
// word from the lists on the kinds (empty for the other kinds), ready to be
// a metric label value.
type Event struct {
	Kind     Kind
	Key      string        // the lock key as the caller named it (no prefix)
	Reason   string        // why, for the kinds that list reasons
	Node     string        // Node: the node's name
	Op       string        // Node: the operation
	Attempts int           // Attempt, Acquired, NotAcquired
	Fence    uint64        // Acquired
	Latency  time.Duration // time the operation took
	Err      error         // NotAcquired, Lost, failed Extended, Node and UndoFailed
	// Context is the context of the call the event belongs to (Acquire,
	// Extend, Release), for tracing adapters; context.Background() for
	// the watchdog's and the background cleanup's events.
	Context context.Context
}

// Observer receives events synchronously, on the caller's goroutine or,
// for Node events and the watchdog's events, on the client's own
// goroutines, possibly concurrently: it must be fast, safe for concurrent
// use, and must not call back into the Client.
type Observer interface {
	Observe(Event)
}

// Func adapts a function to Observer.
type Func func(Event)

// Observe implements Observer.
func (f Func) Observe(e Event) { f(e) }
