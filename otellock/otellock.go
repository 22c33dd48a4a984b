// Package otellock reports quorumlock's lock events through OpenTelemetry:
// metrics with the names and units of the promlock module, a span for each
// acquisition, and Do, which traces the work under a lock.
//
//	obs, err := otellock.New() // the global MeterProvider and TracerProvider
//	locks, err := redlock.New(nodes, redlock.WithObserver(obs))
//	err = obs.Do(ctx, locks, "report:daily", time.Minute, work)
//
// Spans:
//
//   - "quorumlock.acquire" for every acquisition call (Acquire, TryAcquire,
//     Do, TryDo), a child of the span in the caller's context, from the
//     start of the call to its result, with attributes quorumlock.class,
//     quorumlock.attempts, quorumlock.outcome ("acquired" or the reason it
//     was not: contended, split_vote, quorum_unreachable, canceled, expired,
//     invalid, recovering), quorumlock.fence when acquired, and quorumlock.wait (seconds).
//   - "quorumlock.do" around Do, and "quorumlock.work" around the function
//     it runs, with quorumlock.fence; failed extensions ("quorumlock.
//     extension_failed") and the loss of the lock ("quorumlock.lost", with
//     quorumlock.reason) are events on the work span.
package otellock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/redlock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

const scope = "github.com/quorumlock/quorumlock/otellock"

// Observer is a observe.Observer that records OpenTelemetry metrics and
// spans. It is safe for concurrent use and may observe several clients.
type Observer struct {
	rec     *lockmetrics.Recorder
	classes *lockmetrics.Classes
	tracer  trace.Tracer

	mu   sync.Mutex
	work map[string][]trace.Span // key -> work spans of Do running under it
}

// Option configures New.
type Option func(*config)

type config struct {
	meters     metric.MeterProvider
	tracers    trace.TracerProvider
	class      func(string) string
	maxClasses int
}

// WithMeterProvider sets where the metrics go. Default: otel.GetMeterProvider().
func WithMeterProvider(p metric.MeterProvider) Option { return func(c *config) { c.meters = p } }

// WithTracerProvider sets where the spans go. Default: otel.GetTracerProvider().
func WithTracerProvider(p trace.TracerProvider) Option { return func(c *config) { c.tracers = p } }

// WithClass sets the function that maps a lock key to its class attribute.
// Default: the part of the key before the first ':' (the whole key when it
// has none).
func WithClass(f func(key string) string) Option { return func(c *config) { c.class = f } }

// WithMaxClasses bounds the distinct class values; keys of later classes
// are recorded as "other". Default 100; it must not be negative.
func WithMaxClasses(n int) Option { return func(c *config) { c.maxClasses = n } }

// New creates the instruments and returns their Observer. It fails
// (wrapping redlock.ErrInvalidArgument) on a negative WithMaxClasses, and
// with the meter's error when an instrument cannot be created.
func New(opts ...Option) (*Observer, error) {
	cfg := config{meters: otel.GetMeterProvider(), tracers: otel.GetTracerProvider()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.meters == nil || cfg.tracers == nil {
		return nil, fmt.Errorf("%w: otellock: nil provider", redlock.ErrInvalidArgument)
	}
	classes, err := lockmetrics.NewClasses(cfg.class, cfg.maxClasses)
	if err != nil {
		return nil, err
	}
	s, err := newSink(cfg.meters.Meter(scope))
	if err != nil {
		return nil, err
	}
	return &Observer{
		rec: lockmetrics.NewRecorder(s, classes), classes: classes,
		tracer: cfg.tracers.Tracer(scope), work: map[string][]trace.Span{},
	}, nil
}

// Observe implements observe.Observer.
func (o *Observer) Observe(e observe.Event) {
	o.rec.Observe(e)
	switch e.Kind {
	case observe.Acquired, observe.NotAcquired:
		o.acquireSpan(e)
	case observe.Extended:
		if e.Err != nil {
			o.onWork(e.Key, "quorumlock.extension_failed", attribute.String("quorumlock.reason", e.Reason), attribute.String("error.message", e.Err.Error()))
		}
	case observe.Lost:
		o.onWork(e.Key, "quorumlock.lost", attribute.String("quorumlock.reason", e.Reason), attribute.String("error.message", e.Err.Error()))
	}
}

// FencedRejection counts a write that a fenced store refused because its
// fence was stale (errors.Is(err, statuslock.ErrStaleFence)), for key.
func (o *Observer) FencedRejection(key string) { o.rec.FencedRejection(key) }

// acquireSpan records an acquisition call that has ended, as a span from
// its start (now minus its latency) to now.
func (o *Observer) acquireSpan(e observe.Event) {
	end := time.Now()
	outcome := "acquired"
	if e.Kind == observe.NotAcquired {
		outcome = e.Reason
	}
	attrs := []attribute.KeyValue{
		attribute.String("quorumlock.class", o.classes.Of(e.Key)),
		attribute.Int("quorumlock.attempts", e.Attempts),
		attribute.String("quorumlock.outcome", outcome),
		attribute.Float64("quorumlock.wait", e.Latency.Seconds()),
	}
	if e.Kind == observe.Acquired {
		attrs = append(attrs, attribute.Int64("quorumlock.fence", int64(e.Fence)))
	}
	_, span := o.tracer.Start(e.Context, "quorumlock.acquire", trace.WithTimestamp(end.Add(-e.Latency)), trace.WithAttributes(attrs...))
	switch outcome {
	case "acquired", "contended", "canceled":
	default: // the nodes or the configuration failed
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
}

// onWork adds an event to the work spans running under key.
func (o *Observer) onWork(key, name string, attrs ...attribute.KeyValue) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.work[key] {
		s.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// Do is c.Do traced: a "quorumlock.do" span around it (with the acquisition
// span inside), and a "quorumlock.work" span around fn, on which the lock's
// failed extensions and its loss are recorded as events. c should be
// observed by o (redlock.WithObserver) for those events and the acquisition
// span.
func (o *Observer) Do(ctx context.Context, c *redlock.Client, key string, ttl time.Duration, fn func(ctx context.Context) error) error {
	ctx, span := o.tracer.Start(ctx, "quorumlock.do", trace.WithAttributes(attribute.String("quorumlock.class", o.classes.Of(key))))
	defer span.End()
	var (
		work    trace.Span
		workEnd time.Time
	)
	// The work span takes events until Do returns: the loss is signalled
	// (fn's context cancelled) before its event is observed, and Do's
	// release waits for the watchdog's loss callback, so every event of the
	// lock is in by then. The span still ends when fn did.
	defer func() {
		if work != nil {
			o.track(key, work, false)
			work.End(trace.WithTimestamp(workEnd))
		}
	}()
	err := c.Do(ctx, key, ttl, func(ctx context.Context) error {
		ctx, work = o.tracer.Start(ctx, "quorumlock.work")
		defer func() { workEnd = time.Now() }()
		if l, ok := redlock.LockFromContext(ctx); ok {
			work.SetAttributes(attribute.Int64("quorumlock.fence", int64(l.Fence())))
		}
		o.track(key, work, true)
		err := fn(ctx)
		if err != nil {
			work.SetStatus(codes.Error, err.Error())
		}
		return err
	})
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// track adds or removes a work span of key.
func (o *Observer) track(key string, s trace.Span, on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	spans := o.work[key]
	if on {
		o.work[key] = append(spans, s)
		return
	}
	for i, x := range spans {
		if x == s {
			spans = append(spans[:i], spans[i+1:]...)
			break
		}
	}
	if len(spans) == 0 {
		delete(o.work, key)
	} else {
		o.work[key] = spans
	}
}
