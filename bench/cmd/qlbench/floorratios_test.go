package main

import (
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

func TestFloorRatios(t *testing.T) {
	rp := &harness.Report{}
	m := func(cps, cmds float64) harness.Rep {
		return harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "cycles/s", Value: cps}, {Unit: "server-cmds/op", Value: cmds}}}
	}
	rp.Add("Uncontended", "nodes=5", libRaw, m(2000, 20))
	rp.Add("Uncontended", "nodes=5", libRS, m(1000, 20))
	rp.Add("Uncontended", "nodes=5", libQLRueidis, m(1900, 30))
	rp.Add("Parallel", "goroutines=16/nodes=5", libRaw, harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "cycles/s", Value: 4000}}})
	rp.Add("Parallel", "goroutines=16/nodes=5", libQLRueidis, harness.Rep{N: 1, Metrics: []harness.Metric{{Unit: "cycles/s", Value: 3000}}})
	rs := floorRatios(rp)
	get := func(name string) harness.Ratio {
		t.Helper()
		for _, r := range rs {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no ratio %q in %+v", name, rs)
		return harness.Ratio{}
	}
	if r := get("uncontended 5 nodes quorumlock-rueidis cycles/s vs raw floor"); r.Value != 0.95 || r.Met == nil || !*r.Met {
		t.Errorf("rueidis vs raw = %+v, want 0.95, target met", r)
	}
	if r := get("uncontended 5 nodes quorumlock-rueidis cycles/s vs redsync"); r.Value != 1.9 || r.Met != nil {
		t.Errorf("rueidis vs redsync = %+v, want 1.9 without a target", r)
	}
	if r := get("uncontended 5 nodes raw cycles/s vs redsync"); r.Value != 2 {
		t.Errorf("raw vs redsync = %+v, want 2", r)
	}
	if r := get("uncontended 5 nodes quorumlock-rueidis server commands/cycle vs raw floor"); r.Value != 1.5 || r.Met == nil || *r.Met {
		t.Errorf("commands vs raw = %+v, want 1.5, target missed", r)
	}
	if r := get("parallel 16 goroutines quorumlock-rueidis cycles/s vs raw floor"); r.Value != 0.75 || r.Met == nil || *r.Met {
		t.Errorf("parallel rueidis vs raw = %+v, want 0.75, target missed", r)
	}
	for _, r := range rs {
		if strings.Contains(r.Name, "raw cycles/s vs raw") || strings.Contains(r.Name, "redsync cycles/s vs redsync") {
			t.Errorf("a library compared with itself: %s", r.Name)
		}
	}

	var b strings.Builder
	printFloorTable(&b, rp)
	for _, want := range []string{
		"uncontended 5 nodes     quorumlock-rueidis  1900      1.90x      0.95x  -          30",
		"parallel 16 goroutines  quorumlock-rueidis  3000      -          0.75x",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
