// Package promlock exports quorumlock's lock events as Prometheus metrics.
//
//	metrics, err := promlock.New(prometheus.DefaultRegisterer)
//	locks, err := redlock.New(nodes, redlock.WithObserver(metrics))
//
// The metric names, labels and buckets are listed in the repository's
// README ("Metrics and tracing"); they are the same in the otellock module.
// Keys are grouped into classes (WithClass; default: the part of the key
// before the first ':'), and at most WithMaxClasses classes are labelled,
// so the number of series is bounded whatever the keys are.
package promlock

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
)

// Observer is a observe.Observer that updates Prometheus metrics. It is safe
// for concurrent use and may observe several clients.
type Observer struct {
	rec *lockmetrics.Recorder
}

// Option configures New.
type Option func(*config)

type config struct {
	class      func(key string) string
	maxClasses int
}

// WithClass sets the function that maps a lock key to its class label.
// Default: the part of the key before the first ':' (the whole key when it
// has none).
func WithClass(f func(key string) string) Option { return func(c *config) { c.class = f } }

// WithMaxClasses bounds the distinct class labels; keys of later classes
// are labelled "other". Default 100; it must not be negative.
func WithMaxClasses(n int) Option { return func(c *config) { c.maxClasses = n } }

// New registers the metrics with reg and returns their Observer. It fails
// (wrapping redlock.ErrInvalidArgument) on a nil reg or a negative
// WithMaxClasses, and with reg's error when the metrics are registered
// there already.
func New(reg prometheus.Registerer, opts ...Option) (*Observer, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: promlock: nil registerer", redlock.ErrInvalidArgument)
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	classes, err := lockmetrics.NewClasses(cfg.class, cfg.maxClasses)
	if err != nil {
		return nil, err
	}
	s, err := newSink(reg)
	if err != nil {
		return nil, err
	}
	return &Observer{rec: lockmetrics.NewRecorder(s, classes)}, nil
}

// Observe implements observe.Observer.
func (o *Observer) Observe(e observe.Event) { o.rec.Observe(e) }

// FencedRejection counts a write that a fenced store refused because its
// fence was stale (errors.Is(err, statuslock.ErrStaleFence)), for key, in
// quorumlock_fenced_rejections_total. The stores do not know the adapter:
// call it where the store's error is handled.
func (o *Observer) FencedRejection(key string) { o.rec.FencedRejection(key) }
