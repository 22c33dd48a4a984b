// Package harness holds the measuring pieces of the benchmark: latency
// percentiles, results with their repetitions, benchstat lines, the JSON
// report, charts, a blackhole TCP proxy and go-redis command counters.
package harness

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value such that at least p percent of
// the values are less than or equal to it. It returns 0 for no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Latencies collects durations; it reuses its buffer across Reset calls so
// that recording does not allocate in steady state.
type Latencies struct{ d []time.Duration }

// NewLatencies preallocates room for n durations.
func NewLatencies(n int) *Latencies { return &Latencies{d: make([]time.Duration, 0, n)} }

// Add records one duration.
func (l *Latencies) Add(d time.Duration) { l.d = append(l.d, d) }

// Reset forgets every duration, keeping the buffer.
func (l *Latencies) Reset() { l.d = l.d[:0] }

// Len is the number of recorded durations.
func (l *Latencies) Len() int { return len(l.d) }

// Merge appends other's durations.
func (l *Latencies) Merge(other *Latencies) { l.d = append(l.d, other.d...) }

// Summary sorts the durations and returns their order statistics.
func (l *Latencies) Summary() Summary {
	slices.Sort(l.d)
	return Summarize(l.d)
}

// Summary is the order statistics of a set of durations.
type Summary struct {
	N             int
	Min, P50, P90 time.Duration
	P99, Max      time.Duration
	Mean          time.Duration
}

// Summarize computes the Summary of sorted durations.
func Summarize(sorted []time.Duration) Summary {
	s := Summary{N: len(sorted)}
	if s.N == 0 {
		return s
	}
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	s.Min, s.Max = sorted[0], sorted[s.N-1]
	s.P50 = Percentile(sorted, 50)
	s.P90 = Percentile(sorted, 90)
	s.P99 = Percentile(sorted, 99)
	s.Mean = sum / time.Duration(s.N)
	return s
}

// Median returns the median of vs (the mean of the middle two for an even
// count), NaN for none. vs is not modified.
func Median(vs []float64) float64 {
	n := len(vs)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
