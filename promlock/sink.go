package promlock

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/quorumlock/internal/lockmetrics"
)

// sink holds one client_golang vector per metric of lockmetrics.All.
type sink struct {
	gauges    []*prometheus.GaugeVec
	observers []*prometheus.HistogramVec
	counters  []*prometheus.CounterVec
}

func newSink(reg prometheus.Registerer) (*sink, error) {
	n := len(lockmetrics.All)
	s := &sink{gauges: make([]*prometheus.GaugeVec, n), observers: make([]*prometheus.HistogramVec, n), counters: make([]*prometheus.CounterVec, n)}
	var cs []prometheus.Collector
	for _, m := range lockmetrics.All {
		switch m.Kind {
		case lockmetrics.Counter:
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.Name, Help: m.Help}, m.Labels)
			s.counters[m.ID] = v
			cs = append(cs, v)
		case lockmetrics.Gauge:
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: m.Name, Help: m.Help}, m.Labels)
			s.gauges[m.ID] = v
			cs = append(cs, v)
		case lockmetrics.Histogram:
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets}, m.Labels)
			s.observers[m.ID] = v
			cs = append(cs, v)
		}
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("promlock: register: %w", err)
		}
	}
	return s, nil
}

// Add implements lockmetrics.Sink.
func (s *sink) Add(m *lockmetrics.Metric, delta float64, labels ...string) {
	if m.Kind == lockmetrics.Gauge {
		s.gauges[m.ID].WithLabelValues(labels...).Add(delta)
		return
	}
	s.counters[m.ID].WithLabelValues(labels...).Add(delta)
}

// Observe implements lockmetrics.Sink.
func (s *sink) Observe(m *lockmetrics.Metric, v float64, labels ...string) {
	s.observers[m.ID].WithLabelValues(labels...).Observe(v)
}
