package lockmetrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Text is a Sink kept in memory that writes the Prometheus text exposition
// format (version 0.0.4), for programs of the root module (the demo), which
// must not depend on client_golang.
type Text struct {
	mu     sync.Mutex
	series [][]*textSeries // by Metric.ID
	index  []map[string]*textSeries
}

type textSeries struct {
	labels  []string
	value   float64  // Counter, Gauge; Histogram: sum
	count   uint64   // Histogram
	buckets []uint64 // Histogram, per upper bound (not cumulative)
}

// NewText returns an empty Text sink.
func NewText() *Text {
	t := &Text{series: make([][]*textSeries, len(All)), index: make([]map[string]*textSeries, len(All))}
	for i := range All {
		t.index[i] = map[string]*textSeries{}
	}
	return t
}

func (t *Text) get(m *Metric, labels []string) *textSeries {
	k := strings.Join(labels, "\xff")
	s := t.index[m.ID][k]
	if s == nil {
		s = &textSeries{labels: slices.Clone(labels)}
		if m.Kind == Histogram {
			s.buckets = make([]uint64, len(m.Buckets))
		}
		t.index[m.ID][k] = s
		t.series[m.ID] = append(t.series[m.ID], s)
	}
	return s
}

// Add implements Sink.
func (t *Text) Add(m *Metric, delta float64, labels ...string) {
	t.mu.Lock()
	t.get(m, labels).value += delta
	t.mu.Unlock()
}

// Observe implements Sink.
func (t *Text) Observe(m *Metric, v float64, labels ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.get(m, labels)
	s.value += v
	s.count++
	if i, _ := slices.BinarySearch(m.Buckets, v); i < len(m.Buckets) {
		s.buckets[i]++
	}
}

// WriteTo writes every series in the text exposition format.
func (t *Text) WriteTo(w io.Writer) (int64, error) {
	t.mu.Lock()
	var b strings.Builder
	for _, m := range All {
		series := slices.Clone(t.series[m.ID])
		if len(series) == 0 {
			continue
		}
		slices.SortFunc(series, func(a, b *textSeries) int { return slices.Compare(a.labels, b.labels) })
		typ := map[Kind]string{Counter: "counter", Gauge: "gauge", Histogram: "histogram"}[m.Kind]
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", m.Name, m.Help, m.Name, typ)
		for _, s := range series {
			lv := labelText(m.Labels, s.labels)
			if m.Kind != Histogram {
				fmt.Fprintf(&b, "%s{%s} %s\n", m.Name, lv, num(s.value))
				continue
			}
			var cum uint64
			for i, le := range m.Buckets {
				cum += s.buckets[i]
				fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", m.Name, lv, num(le), cum)
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n", m.Name, lv, s.count)
			fmt.Fprintf(&b, "%s_sum{%s} %s\n%s_count{%s} %d\n", m.Name, lv, num(s.value), m.Name, lv, s.count)
		}
	}
	t.mu.Unlock()
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func labelText(names, values []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + `="` + labelEscaper.Replace(values[i]) + `"`
	}
	return strings.Join(parts, ",")
}

// labelEscaper escapes a label value as the text format asks: \, " and newline.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func num(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
