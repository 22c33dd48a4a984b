package lockmetrics

import "github.com/quorumlock/quorumlock/redlock"

// Sink records updates of the metrics in All; label values come in the
// order of Metric.Labels. It must be safe for concurrent use.
type Sink interface {
	Add(m *Metric, delta float64, labels ...string) // Counter, Gauge
	Observe(m *Metric, v float64, labels ...string) // Histogram
}

// Recorder turns redlock events into metric updates on a Sink. It is a
// redlock.Observer.
type Recorder struct {
	sink    Sink
	classes *Classes
}

// NewRecorder returns a Recorder on sink, labelling keys with classes.
func NewRecorder(sink Sink, classes *Classes) *Recorder {
	return &Recorder{sink: sink, classes: classes}
}

// Observe implements redlock.Observer. The gauges rely on the balance that
// redlock.Event documents: a call's first EventAttempt is followed by one
// EventAcquired or EventNotAcquired, an acquired lock by one EventReleased
// or EventLost, a kept "start" by one "stop".
func (r *Recorder) Observe(e redlock.Event) {
	s := r.sink
	if e.Kind == redlock.EventNode && e.Reason == "recovering" {
		// The node's answer was observed already: this is what it meant.
		s.Add(NodeRecovering, 1, e.Node)
		return
	}
	if e.Kind == redlock.EventNode {
		s.Observe(NodeSeconds, e.Latency.Seconds(), e.Node, e.Op)
		if e.Err != nil {
			s.Add(NodeErrors, 1, e.Node, e.Op)
		}
		return
	}
	class := r.classes.Of(e.Key)
	switch e.Kind {
	case redlock.EventAttempt:
		if e.Attempts == 1 {
			s.Add(Waiters, 1, class)
		}
	case redlock.EventAcquired:
		r.ended(class, "acquired", e)
		s.Add(Held, 1, class)
		if e.Reason == "took_over" {
			s.Add(Takeovers, 1, class)
		}
	case redlock.EventNotAcquired:
		r.ended(class, e.Reason, e)
	case redlock.EventContended:
		s.Add(Contended, 1, class, e.Reason)
	case redlock.EventExtended:
		result := "ok"
		if e.Err != nil {
			result = e.Reason
		}
		s.Add(Extensions, 1, class, result)
	case redlock.EventReleased:
		s.Add(Releases, 1, class)
		s.Add(Held, -1, class)
	case redlock.EventLost:
		s.Add(Losses, 1, class, e.Reason)
		s.Add(Held, -1, class)
	case redlock.EventKept:
		if e.Reason == "start" {
			s.Add(Kept, 1, class)
		} else {
			s.Add(Kept, -1, class)
		}
	}
}

// ended records the result of an acquisition call.
func (r *Recorder) ended(class, result string, e redlock.Event) {
	r.sink.Add(Waiters, -1, class)
	r.sink.Add(Acquisitions, 1, class, result)
	r.sink.Observe(AcquireSeconds, e.Latency.Seconds(), class, result)
	r.sink.Observe(AcquireAttempts, float64(e.Attempts), class)
}

// FencedRejection counts one write that a fenced store refused for a stale
// fence (statuslock.ErrStaleFence) on key.
func (r *Recorder) FencedRejection(key string) {
	r.sink.Add(FencedRejections, 1, r.classes.Of(key))
}
