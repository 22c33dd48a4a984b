package otellock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/otellock"
	"github.com/quorumlock/quorumlock/redlock"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

// go-redis redials a killed node from a goroutine that sleeps 1 s between
// dials and ends at the next one after its client is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

type world struct {
	spans  *tracetest.SpanRecorder
	tracer *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	obs    *otellock.Observer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	w.tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	obs, err := otellock.New(otellock.WithTracerProvider(w.tracer),
		otellock.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.reader))))
	if err != nil {
		t.Fatal(err)
	}
	w.obs = obs
	return w
}

func realClient(t *testing.T, n int, opts ...redlock.Option) (*redistest.Cluster, *redlock.Client) {
	t.Helper()
	cl := redistest.StartT(t, n)
	var nodes []node.Node
	for _, rc := range cl.Clients() {
		nodes = append(nodes, redisnode.New(rc))
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return cl, c
}

func (w *world) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range w.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func (w *world) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := w.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sum adds the points of a counter or up-down counter whose attributes
// include want.
func sum(m metricdata.Metrics, want ...attribute.KeyValue) float64 {
	s, ok := m.Data.(metricdata.Sum[float64])
	if !ok {
		return 0
	}
	var total float64
	for _, p := range s.DataPoints {
		if has(p.Attributes, want) {
			total += p.Value
		}
	}
	return total
}

func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// Do on real nodes: the do, acquire and work spans nest under the caller's
// span and carry attempts, outcome and fence; a contended try has its span.
func TestSpansOfDoAndTry(t *testing.T) {
	w := newWorld(t)
	_, c := realClient(t, 3, redlock.WithObserver(w.obs))
	ctx, caller := w.tracer.Tracer("test").Start(t.Context(), "caller")
	var fence uint64
	err := w.obs.Do(ctx, c, "job:1", 5*time.Second, func(ctx context.Context) error {
		l, _ := redlock.LockFromContext(ctx)
		fence = l.Fence()
		_, err := c.TryAcquire(ctx, "job:1", time.Second) // held by us: contended
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryAcquire under Do: %v", err)
		}
		return nil
	})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	do, acq, work := w.ended("quorumlock.do"), w.ended("quorumlock.acquire"), w.ended("quorumlock.work")
	if len(do) != 1 || len(work) != 1 || len(acq) != 2 {
		t.Fatalf("spans: %d do, %d acquire, %d work; want 1, 2, 1", len(do), len(acq), len(work))
	}
	if do[0].Parent().SpanID() != caller.SpanContext().SpanID() {
		t.Error("quorumlock.do is not a child of the caller's span")
	}
	won, lost := acq[0], acq[1]
	if won.Parent().SpanID() != do[0].SpanContext().SpanID() || work[0].Parent().SpanID() != do[0].SpanContext().SpanID() {
		t.Error("the acquire and work spans are not children of quorumlock.do")
	}
	if lost.Parent().SpanID() != work[0].SpanContext().SpanID() {
		t.Error("the try's acquire span is not a child of the work span (its caller)")
	}
	if got := attr(won, "quorumlock.outcome").AsString(); got != "acquired" {
		t.Errorf("outcome %q, want acquired", got)
	}
	if got := attr(won, "quorumlock.fence").AsInt64(); uint64(got) != fence || fence == 0 {
		t.Errorf("acquire span fence %d, the lock's %d", got, fence)
	}
	if got := attr(work[0], "quorumlock.fence").AsInt64(); uint64(got) != fence {
		t.Errorf("work span fence %d, the lock's %d", got, fence)
	}
	if got := attr(won, "quorumlock.attempts").AsInt64(); got != 1 {
		t.Errorf("attempts %d, want 1", got)
	}
	if got := attr(lost, "quorumlock.outcome").AsString(); got != "contended" {
		t.Errorf("the try's outcome %q, want contended", got)
	}
	if !won.StartTime().Before(won.EndTime()) || attr(won, "quorumlock.class").AsString() != "job" {
		t.Errorf("acquire span %v..%v class %q", won.StartTime(), won.EndTime(), attr(won, "quorumlock.class").AsString())
	}
	m := w.metrics(t)
	if got := sum(m["quorumlock_acquisitions_total"], attribute.String("class", "job"), attribute.String("result", "acquired")); got != 1 {
		t.Errorf("acquisitions{job,acquired} %v, want 1", got)
	}
	if got := sum(m["quorumlock_acquisitions_total"], attribute.String("result", "contended")); got != 1 {
		t.Errorf("acquisitions{contended} %v, want 1", got)
	}
	for _, g := range []string{"quorumlock_held_locks", "quorumlock_kept_locks", "quorumlock_waiters"} {
		if got := sum(m[g]); got != 0 {
			t.Errorf("%s %v after Do, want 0", g, got)
		}
	}
}

// Nodes die under Do: failed extensions and the loss are events on the work
// span.
func TestLossIsAWorkSpanEvent(t *testing.T) {
	w := newWorld(t)
	cl, c := realClient(t, 3, redlock.WithObserver(w.obs), redlock.WithKeepAlive(extend.WithRetryInterval(20*time.Millisecond)))
	// A TTL of seconds leaves the watchdog time for extension rounds that
	// fail (the killed nodes refuse connections) before the validity ends.
	err := w.obs.Do(t.Context(), c, "job:2", 4*time.Second, func(ctx context.Context) error {
		for _, n := range cl.Nodes()[:2] {
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Do: %v, want ErrLockLost", err)
	}
	work := w.ended("quorumlock.work")
	if len(work) != 1 {
		t.Fatalf("%d work spans", len(work))
	}
	var names []string
	for _, e := range work[0].Events() {
		names = append(names, e.Name)
		// extension_failed, or unconfirmed when the last round was still
		// out as the validity ended (a loaded machine).
		if e.Name == "quorumlock.lost" && !slices.Contains(e.Attributes, attribute.String("quorumlock.reason", "extension_failed")) &&
			!slices.Contains(e.Attributes, attribute.String("quorumlock.reason", "unconfirmed")) {
			t.Errorf("lost event attributes %v, want reason extension_failed or unconfirmed", e.Attributes)
		}
	}
	if !slices.Contains(names, "quorumlock.extension_failed") || !slices.Contains(names, "quorumlock.lost") {
		t.Errorf("work span events %v, want quorumlock.extension_failed and quorumlock.lost", names)
	}
	m := w.metrics(t)["quorumlock_losses_total"]
	if got := sum(m, attribute.String("reason", "extension_failed")) + sum(m, attribute.String("reason", "unconfirmed")); got != 1 {
		t.Errorf("losses{extension_failed or unconfirmed} %v, want 1", got)
	}
}

// Every metric of the promlock adapter exists here with the same name,
// unit and kind.
func TestSameNamesAndUnitsAsPrometheus(t *testing.T) {
	w := newWorld(t)
	for _, e := range []observe.Event{
		{Kind: observe.Attempt, Key: "a:1", Attempts: 1},
		{Kind: observe.Contended, Key: "a:1", Reason: "contended"},
		{Kind: observe.Acquired, Key: "a:1", Attempts: 2, Context: context.Background()},
		{Kind: observe.Acquired, Key: "a:2", Attempts: 1, Reason: "took_over", Context: context.Background()},
		{Kind: observe.Kept, Key: "a:1", Reason: "start"},
		{Kind: observe.Extended, Key: "a:1"},
		{Kind: observe.Kept, Key: "a:1", Reason: "stop"},
		{Kind: observe.Lost, Key: "a:1", Reason: "expired", Err: redlock.ErrLockLost},
		{Kind: observe.Released, Key: "a:1"},
		{Kind: observe.Node, Node: "n1", Op: "acquire", Err: errors.New("down")},
		{Kind: observe.Node, Node: "n2", Op: "acquire", Reason: "recovering", Err: &redlock.NodeError{Node: "n2", Op: "acquire", Err: redlock.ErrRecovering}},
		{Kind: observe.UndoFailed, Key: "a:3", Node: "n1", Op: "release", Err: errors.New("down")},
	} {
		w.obs.Observe(e)
	}
	w.obs.FencedRejection("a:1")
	got := w.metrics(t)
	for _, d := range lockmetrics.All {
		m, ok := got[d.Name]
		if !ok {
			t.Errorf("%s not recorded", d.Name)
			continue
		}
		if m.Unit != d.Unit {
			t.Errorf("%s unit %q, want %q", d.Name, m.Unit, d.Unit)
		}
		var kind lockmetrics.Kind
		switch data := m.Data.(type) {
		case metricdata.Sum[float64]:
			kind = lockmetrics.Counter
			if !data.IsMonotonic {
				kind = lockmetrics.Gauge
			}
		case metricdata.Histogram[float64]:
			kind = lockmetrics.Histogram
			if b := data.DataPoints[0].Bounds; !slices.Equal(b, d.Buckets) {
				t.Errorf("%s buckets %v, want %v", d.Name, b, d.Buckets)
			}
		}
		if kind != d.Kind {
			t.Errorf("%s kind %v, want %v", d.Name, kind, d.Kind)
		}
	}
	if len(got) != len(lockmetrics.All) {
		t.Errorf("%d metrics, want %d", len(got), len(lockmetrics.All))
	}
}

func TestBadInput(t *testing.T) {
	if _, err := otellock.New(otellock.WithMaxClasses(-1)); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("WithMaxClasses(-1): %v", err)
	}
	if _, err := otellock.New(otellock.WithMeterProvider(nil)); !errors.Is(err, redlock.ErrInvalidArgument) {
		t.Errorf("nil MeterProvider: %v", err)
	}
}
