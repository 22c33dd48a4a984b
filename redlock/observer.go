package redlock

import "time"

// EventKind names what an Event reports.
type EventKind int

const (
	// EventAttempt: one acquisition attempt is about to fan out.
	EventAttempt EventKind = iota + 1
	// EventAcquired: the lock was acquired; Latency covers all attempts.
	EventAcquired
	// EventContended: an attempt lost to another holder.
	EventContended
	// EventNotAcquired: Acquire or TryAcquire gave up.
	EventNotAcquired
	// EventExtended: an extension reached a majority.
	EventExtended
	// EventReleased: a release reached a majority.
	EventReleased
	// EventLost: an extension or release found the lock no longer ours, or
	// auto-extension gave it up (a safety margin before its validity ends,
	// or at the extend.WithMaxHold cap).
	EventLost
	// EventNodeError: one node failed one operation; Node and Err say which.
	EventNodeError
)

var eventNames = map[EventKind]string{
	EventAttempt: "attempt", EventAcquired: "acquired", EventContended: "contended",
	EventNotAcquired: "not_acquired", EventExtended: "extended", EventReleased: "released",
	EventLost: "lost", EventNodeError: "node_error",
}

func (k EventKind) String() string {
	if s, ok := eventNames[k]; ok {
		return s
	}
	return "unknown"
}

// Event is one thing that happened to a lock, for metrics.
type Event struct {
	Kind     EventKind
	Key      string        // the lock key as the caller named it (no prefix)
	Node     string        // EventNodeError: the node's name
	Op       string        // EventNodeError: the operation
	Attempts int           // EventAttempt, EventAcquired, EventNotAcquired
	Latency  time.Duration // time the operation took
	Err      error         // EventNodeError, EventNotAcquired, EventLost
}

// Observer receives events synchronously on the caller's goroutine, so it
// must be fast and must not call back into the Client. It is the hook for
// metrics (Prometheus counters, OpenTelemetry adapters in their own modules).
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe implements Observer.
func (f ObserverFunc) Observe(e Event) { f(e) }
