package otellock

import (
	"context"
	"fmt"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// sink holds one instrument per metric of lockmetrics.All: counters,
// up-down counters for the gauges, and histograms with the same buckets.
type sink struct {
	counters   []metric.Float64Counter
	updowns    []metric.Float64UpDownCounter
	histograms []metric.Float64Histogram
}

func newSink(m metric.Meter) (*sink, error) {
	n := len(lockmetrics.All)
	s := &sink{counters: make([]metric.Float64Counter, n), updowns: make([]metric.Float64UpDownCounter, n), histograms: make([]metric.Float64Histogram, n)}
	var err error
	for _, d := range lockmetrics.All {
		switch d.Kind {
		case lockmetrics.Counter:
			s.counters[d.ID], err = m.Float64Counter(d.Name, metric.WithDescription(d.Help), metric.WithUnit(d.Unit))
		case lockmetrics.Gauge:
			s.updowns[d.ID], err = m.Float64UpDownCounter(d.Name, metric.WithDescription(d.Help), metric.WithUnit(d.Unit))
		case lockmetrics.Histogram:
			s.histograms[d.ID], err = m.Float64Histogram(d.Name, metric.WithDescription(d.Help), metric.WithUnit(d.Unit),
				metric.WithExplicitBucketBoundaries(d.Buckets...))
		}
		if err != nil {
			return nil, fmt.Errorf("otellock: instrument %s: %w", d.Name, err)
		}
	}
	return s, nil
}

func attrs(d *lockmetrics.Metric, labels []string) metric.MeasurementOption {
	kv := make([]attribute.KeyValue, len(labels))
	for i, v := range labels {
		kv[i] = attribute.String(d.Labels[i], v)
	}
	return metric.WithAttributes(kv...)
}

// Add implements lockmetrics.Sink.
func (s *sink) Add(d *lockmetrics.Metric, delta float64, labels ...string) {
	if d.Kind == lockmetrics.Gauge {
		s.updowns[d.ID].Add(context.Background(), delta, attrs(d, labels))
		return
	}
	s.counters[d.ID].Add(context.Background(), delta, attrs(d, labels))
}

// Observe implements lockmetrics.Sink.
func (s *sink) Observe(d *lockmetrics.Metric, v float64, labels ...string) {
	s.histograms[d.ID].Record(context.Background(), v, attrs(d, labels))
}
