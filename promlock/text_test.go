package promlock_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/quorumlock/quorumlock/internal/lockmetrics"
	"github.com/quorumlock/quorumlock/observe"
	"github.com/quorumlock/quorumlock/promlock"
)

// The demo's dependency-free exposition (lockmetrics.Text) parses as the
// Prometheus text format and holds the same series and values as this
// adapter, for the same events.
func TestTextExpositionMatchesClientGolang(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promlock.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	text := lockmetrics.NewText()
	classes, _ := lockmetrics.NewClasses(nil, 0)
	rec := lockmetrics.NewRecorder(text, classes)
	both := func(e observe.Event) { obs.Observe(e); rec.Observe(e) }
	for i := range 50 {
		k := fmt.Sprintf("job:%d", i%7)
		both(observe.Event{Kind: observe.Attempt, Key: k, Attempts: 1})
		both(observe.Event{Kind: observe.Node, Node: `n"1\`, Op: "acquire", Latency: time.Duration(i) * time.Millisecond})
		if i%5 == 0 {
			both(observe.Event{Kind: observe.Node, Node: `n"1\`, Op: "acquire", Reason: "recovering", Err: errors.New("lost its data")})
		}
		if i%3 == 0 {
			both(observe.Event{Kind: observe.Contended, Key: k, Reason: "split_vote"})
			both(observe.Event{Kind: observe.NotAcquired, Key: k, Reason: "contended", Attempts: 2, Latency: 3 * time.Second})
			continue
		}
		both(observe.Event{Kind: observe.Acquired, Key: k, Attempts: 1, Latency: time.Duration(i) * 100 * time.Microsecond})
		both(observe.Event{Kind: observe.Lost, Key: k, Reason: "expired", Err: errors.New("x")})
		both(observe.Event{Kind: observe.Node, Node: "n2", Op: "release", Err: errors.New("down"), Latency: time.Second})
	}
	obs.FencedRejection("status:a")
	rec.FencedRejection("status:a")

	var buf bytes.Buffer
	if _, err := text.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var p expfmt.TextParser
	parsed, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("the text exposition does not parse: %v\n%s", err, buf.String())
	}
	want := families(t, reg)
	if len(parsed) != len(want) {
		t.Errorf("%d families in the text, %d in the registry", len(parsed), len(want))
	}
	for name, mf := range want {
		got := parsed[name]
		if got == nil {
			t.Errorf("%s missing from the text", name)
			continue
		}
		if a, b := flatten(got), flatten(mf); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s:\ntext     %v\nregistry %v", name, a, b)
		}
	}
}

// flatten renders a family's series as sorted strings of labels and values.
func flatten(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		s := fmt.Sprint(mf.GetType(), " ")
		for _, lp := range m.GetLabel() {
			s += lp.GetName() + "=" + lp.GetValue() + " "
		}
		switch {
		case m.Counter != nil:
			s += fmt.Sprint(m.Counter.GetValue())
		case m.Gauge != nil:
			s += fmt.Sprint(m.Gauge.GetValue())
		case m.Histogram != nil:
			s += fmt.Sprint(m.Histogram.GetSampleCount(), " ", round(m.Histogram.GetSampleSum()))
			for _, b := range m.Histogram.GetBucket() {
				if math.IsInf(b.GetUpperBound(), 1) {
					continue // implied by the count; Gather omits it
				}
				s += fmt.Sprint(" ", b.GetUpperBound(), ":", b.GetCumulativeCount())
			}
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func round(v float64) float64 { return math.Round(v*1e9) / 1e9 }
