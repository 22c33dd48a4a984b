package main

import (
	"slices"
	"testing"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

func TestRotate(t *testing.T) {
	in := []int{1, 2, 3}
	for k, want := range [][]int{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 2, 3}} {
		if got := rotate(in, k); !slices.Equal(got, want) {
			t.Errorf("rotate(%v, %d) = %v, want %v", in, k, got, want)
		}
	}
}

func TestRatiosTargets(t *testing.T) {
	rp := &harness.Report{}
	m := func(cps, allocs float64) harness.Rep {
		return harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "cycles/s", Value: cps}, {Unit: "allocs/op", Value: allocs}}}
	}
	rp.Add("Uncontended", "nodes=5", libQL, m(2000, 50))
	rp.Add("Uncontended", "nodes=5", libRS, m(1000, 150))
	rs := ratios(rp)
	get := func(name string) harness.Ratio {
		for _, r := range rs {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no ratio %q in %+v", name, rs)
		return harness.Ratio{}
	}
	if r := get("uncontended 5 nodes cycles/s vs redsync"); r.Value != 2 || r.Met == nil || !*r.Met {
		t.Errorf("cycles ratio = %+v", r)
	}
	if r := get("uncontended 5 nodes allocs/cycle vs redsync"); r.Value != 1.0/3 || r.Met == nil || !*r.Met {
		t.Errorf("allocs ratio = %+v", r)
	}
}

func TestFmtValue(t *testing.T) {
	for _, tc := range []struct {
		unit string
		v    float64
		want string
	}{{"p99-ns", 1500, "2µs"}, {"p99-ns", 2.5e6, "2.50ms"}, {"wait-max-ns", 3e9, "3.00s"}, {"cycles/s", 1234.5, "1234"}, {"allocs/op", 12.345, "12.35"}, {"failed", 0, "0"}} {
		if got := fmtValue(tc.unit, tc.v); got != tc.want {
			t.Errorf("fmtValue(%s, %v) = %q, want %q", tc.unit, tc.v, got, tc.want)
		}
	}
}
