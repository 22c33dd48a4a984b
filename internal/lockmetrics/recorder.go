package lockmetrics

import (
	"github.com/quorumlock/quorumlock/observe"
)

// Sink records updates of the metrics in All; label values come in the
// order of Metric.Labels. It must be safe for concurrent use.
type Sink interface {
	Add(m *Metric, delta float64, labels ...string) // Counter, Gauge
	Observe(m *Metric, v float64, labels ...string) // Histogram
}

// Recorder turns redlock events into metric updates on a Sink. It is a
// observe.Observer.
type Recorder struct {
	sink    Sink
	classes *Classes
}

// NewRecorder returns a Recorder on sink, labelling keys with classes.
func NewRecorder(sink Sink, classes *Classes) *Recorder {
	return &Recorder{sink: sink, classes: classes}
}

// Observe implements observe.Observer. The gauges rely on the balance that
// observe.Event documents: a call's first observe.Attempt is followed by one
// observe.Acquired or observe.NotAcquired, an acquired lock by one observe.Released
// or observe.Lost, a kept "start" by one "stop".
func (r *Recorder) Observe(e observe.Event) {
	s := r.sink
	if e.Kind == observe.Node && e.Reason == "recovering" {
		// The node's answer was observed already: this is what it meant.
		s.Add(NodeRecovering, 1, e.Node)
		return
	}
	if e.Kind == observe.UndoFailed {
		s.Add(UndoFailures, 1, e.Node)
		return
	}
	if e.Kind == observe.Node {
		s.Observe(NodeSeconds, e.Latency.Seconds(), e.Node, e.Op)
		if e.Err != nil {
			s.Add(NodeErrors, 1, e.Node, e.Op)
		}
		return
	}
	class := r.classes.Of(e.Key)
	switch e.Kind {
	case observe.Attempt:
		if e.Attempts == 1 {
			s.Add(Waiters, 1, class)
		}
	case observe.Acquired:
		r.ended(class, "acquired", e)
		s.Add(Held, 1, class)
		if e.Reason == "took_over" {
			s.Add(Takeovers, 1, class)
		}
	case observe.NotAcquired:
		r.ended(class, e.Reason, e)
	case observe.Contended:
		s.Add(Contended, 1, class, e.Reason)
	case observe.Extended:
		result := "ok"
		if e.Err != nil {
			result = e.Reason
		}
		s.Add(Extensions, 1, class, result)
	case observe.Released:
		s.Add(Releases, 1, class)
		s.Add(Held, -1, class)
	case observe.Lost:
		s.Add(Losses, 1, class, e.Reason)
		s.Add(Held, -1, class)
	case observe.Kept:
		if e.Reason == "start" {
			s.Add(Kept, 1, class)
		} else {
			s.Add(Kept, -1, class)
		}
	}
}

// ended records the result of an acquisition call.
func (r *Recorder) ended(class, result string, e observe.Event) {
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
