package main

import (
	"slices"
	"testing"
	"time"

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

func TestFreeWhileWaiting(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// A holds 0-10; B waits 2-14 and holds 14-20; C waits 16-30 and gets
	// nothing (fails at 30). Waiting: 2-14 and 16-30 = 26 ms; free
	// meanwhile: 10-14 and 20-30 = 14 ms.
	evs := []lockEvent{
		{at(0), 1, 0}, {at(0), -1, 1}, {at(10), 0, -1},
		{at(2), 1, 0}, {at(14), -1, 1}, {at(20), 0, -1},
		{at(16), 1, 0}, {at(30), -1, 0},
	}
	frac, waited := freeWhileWaiting(evs)
	if waited != 26*time.Millisecond || frac != 14.0/26 {
		t.Errorf("freeWhileWaiting = %v of %v, want 14/26 of 26ms", frac, waited)
	}
}

func TestHandoffs(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	h := newHandoffs()
	h.acquired(at(0)) // the first acquisition follows no release
	h.releasing(at(8))
	h.released(at(10))
	h.acquired(at(13)) // 3 ms after the release returned (5 after it was called)
	h.acquired(at(14)) // no release in between: not a handoff
	h.releasing(at(19))
	h.acquired(at(20)) // won while the release was in flight (1 ms after it was called)
	h.acquired(at(20)) // not a handoff either
	h.released(at(21))
	h.releasing(at(29))
	h.released(at(30)) // nobody acquires again: no sample
	s, fs := h.lat.Summary(), h.fromStart.Summary()
	if s.N != 2 || s.Max != 3*time.Millisecond || s.Min != 0 || h.early != 1 {
		t.Errorf("handoffs: %d samples min %v max %v early %d, want 2 samples 0..3ms, 1 early", s.N, s.Min, s.Max, h.early)
	}
	if fs.N != 2 || fs.Min != time.Millisecond || fs.Max != 5*time.Millisecond {
		t.Errorf("handoffs from the release call: %d samples %v..%v, want 2 samples 1..5ms", fs.N, fs.Min, fs.Max)
	}
}
