package harness

import (
	"math"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i))
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0, 1}, {99.5, 100}, {0.5, 1}} {
		if got := Percentile(ds, tc.p); got != tc.want {
			t.Errorf("Percentile(1..100, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
	// Small sets: p99 of 10 values is the maximum, p50 the 5th.
	small := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := Percentile(small, 99); got != 10 {
		t.Errorf("p99 of 10 values = %v, want 10", got)
	}
	if got := Percentile(small, 50); got != 5 {
		t.Errorf("p50 of 10 values = %v, want 5", got)
	}
}

func TestLatenciesSummary(t *testing.T) {
	l := NewLatencies(4)
	for _, d := range []time.Duration{40, 10, 30, 20} {
		l.Add(d)
	}
	s := l.Summary()
	if s.N != 4 || s.Min != 10 || s.Max != 40 || s.P50 != 20 || s.P99 != 40 || s.Mean != 25 {
		t.Fatalf("summary = %+v", s)
	}
	o := NewLatencies(1)
	o.Add(50)
	l.Merge(o)
	if l.Len() != 5 {
		t.Fatalf("after merge Len = %d, want 5", l.Len())
	}
	l.Reset()
	if l.Len() != 0 || l.Summary().N != 0 {
		t.Fatalf("after Reset: %d values", l.Len())
	}
}

func TestMedian(t *testing.T) {
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("odd median = %v", m)
	}
	in := []float64{4, 1, 3, 2}
	if m := Median(in); m != 2.5 {
		t.Errorf("even median = %v", m)
	}
	if in[0] != 4 {
		t.Errorf("Median modified its input: %v", in)
	}
	if !math.IsNaN(Median(nil)) {
		t.Errorf("median of nothing is not NaN")
	}
}
