package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// libOrder fixes series order (and colours) in charts and tables.
var libOrder = []string{libQL, libQLRueidis, libRS, libRSFast, libFloor, libRueidisFloor, libRaw, libRawRecord, libRawRedis, libQLNoNotify, libQLRueidisNoNotify}

func libRank(l string) int {
	if i := slices.Index(libOrder, l); i >= 0 {
		return i
	}
	return len(libOrder)
}

// scenarioTitle maps a scenario id to its benchmark name.
var scenarioTitle = map[string]string{
	"floor": "Floor", "uncontended": "Uncontended", "parallel": "Parallel",
	"contended": "Contended", "degraded": "Degraded", "silent": "Silent", "held": "Held",
	"split": "Split", "scale": "Scale", "spread": "Spread",
}

// panel builds one chart panel of unit for a scenario: cases in the order
// they ran, one series per library; values are divided by scale.
func panel(rp *harness.Report, scenario, unit, title, ylabel string, scale float64, logY bool) harness.Panel {
	var cases, libs []string
	for _, r := range rp.Results {
		if r.Scenario != scenario {
			continue
		}
		if !slices.Contains(cases, r.Case) {
			cases = append(cases, r.Case)
		}
		if !slices.Contains(libs, r.Lib) {
			libs = append(libs, r.Lib)
		}
	}
	slices.SortStableFunc(libs, func(a, b string) int { return libRank(a) - libRank(b) })
	p := harness.Panel{Title: title, YLabel: ylabel, Cases: cases, LogY: logY}
	for _, l := range libs {
		s := harness.Series{Name: l}
		for _, c := range cases {
			st := harness.Stat{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
			if r := rp.Find(scenario, c, l); r != nil {
				st, _ = r.Stat(unit)
			}
			s.Med = append(s.Med, st.Median/scale)
			s.Min = append(s.Min, st.Min/scale)
			s.Max = append(s.Max, st.Max/scale)
		}
		p.Series = append(p.Series, s)
	}
	// Shorten case labels: drop what every case shares.
	for i, c := range p.Cases {
		p.Cases[i] = strings.ReplaceAll(c, "/nodes=5", "")
	}
	return p
}

func (e *env) chart(s string) error {
	rp := e.report
	sc := scenarioTitle[s]
	var ps []harness.Panel
	switch s {
	case "floor":
		ps = []harness.Panel{
			panel(rp, sc, "ops/s", "Floor: round trips per second", "ops/s", 1, false),
			panel(rp, sc, "p99-ns", "Floor: p99 latency", "µs", 1e3, false),
		}
	case "uncontended":
		ps = []harness.Panel{
			panel(rp, sc, "cycles/s", "Uncontended acquire+release, 1 goroutine", "cycles/s", 1, false),
			panel(rp, sc, "p99-ns", "Uncontended: p99 cycle latency", "µs", 1e3, false),
			panel(rp, sc, "allocs/op", "Uncontended: allocations per cycle", "allocs/cycle", 1, false),
		}
	case "parallel":
		ps = []harness.Panel{
			panel(rp, sc, "cycles/s", "Parallel: 16 goroutines, 5 nodes", "cycles/s", 1, false),
			panel(rp, sc, "p99-ns", "Parallel: p99 cycle latency", "µs", 1e3, false),
		}
	case "contended":
		ps = []harness.Panel{
			panel(rp, sc, "acq/s", "Contended: acquisitions/s (one key)", "acq/s", 1, false),
			panel(rp, sc, "wait-p99-ns", "Contended: wait p99 (log)", "ms", 1e6, true),
			panel(rp, sc, "handoff-p99-ns", "Contended: handoff p99 (log)", "ms", 1e6, true),
			panel(rp, sc, "handoff-p50-rtt", "Contended: handoff p50 / node PING p50", "round trips", 1, false),
			panel(rp, sc, "free-frac", "Contended: share of waiting time the lock sat free", "fraction", 1, false),
		}
	case "degraded":
		ps = []harness.Panel{
			panel(rp, sc, "p50-ns", "Degraded: acquire p50 (log)", "ms", 1e6, true),
			panel(rp, sc, "p99-ns", "Degraded: acquire p99 (log)", "ms", 1e6, true),
		}
	case "silent":
		ps = []harness.Panel{
			panel(rp, sc, "p50-ns", "Silent node: contended single attempt p50 (log)", "ms", 1e6, true),
			panel(rp, sc, "p99-ns", "Silent node: contended single attempt p99 (log)", "ms", 1e6, true),
		}
	case "split":
		ps = splitPanels(rp, sc)
	case "scale":
		ps = scalePanels(rp, sc)
	case "spread":
		ps = []harness.Panel{
			panel(rp, sc, "p50-ns", "Nodes in zones: uncontended cycle p50 (log)", "ms", 1e6, true),
			panel(rp, sc, "p99-ns", "Nodes in zones: uncontended cycle p99 (log)", "ms", 1e6, true),
		}
	case "held":
		ps = []harness.Panel{
			panel(rp, sc, "cpu-cores", "Held locks: client CPU", "cores", 1, false),
			panel(rp, sc, "rounds/s/node", "Held locks: round trips/s per node", "round trips/s", 1, false),
		}
	}
	if len(ps) == 0 || len(ps[0].Cases) == 0 {
		return nil
	}
	name := s + ".png"
	if err := harness.SaveChart(filepath.Join(e.outDir, name), ps...); err != nil {
		return err
	}
	rp.Charts = append(rp.Charts, name)
	return nil
}

// summaryUnits are the units shown in the summary table, per scenario.
var summaryUnits = map[string][]string{
	"Floor":       {"ops/s", "p50-ns", "p99-ns"},
	"Uncontended": {"cycles/s", "p50-ns", "p99-ns", "allocs/op", "B/op", "client-cpu-us/op", "server-cpu-us/op", "server-cmds/op", "errors"},
	"Parallel":    {"cycles/s", "p50-ns", "p99-ns", "allocs/op", "errors"},
	"Contended":   {"acq/s", "wait-p50-ns", "wait-p99-ns", "wait-max-ns", "handoff-p50-ns", "handoff-early", "handoff-start-p50-ns", "handoff-start-p50-rtt", "handoff-p50-rtt", "handoff-p50-rtt-idle", "rtt-p50-ns", "rtt-idle-p50-ns", "handoff-p99-ns", "free-frac", "fair-min", "fair-max", "failed"},
	"Degraded":    {"p50-ns", "p99-ns", "max-ns", "errors"},
	"Silent":      {"p50-ns", "p99-ns", "max-ns", "acquired"},
	"Split":       {"p50-ns", "p99-ns", "max-ns", "rounds", "nobody-frac", "acq/s", "wait-p50-ns", "wait-p99-ns", "wait-max-ns", "failed"},
	"Scale":       {"keys-before", "keys-after-release", "keys-after-expiry", "expiry-s", "release-errors", "heap-B/lock", "extended", "lost", "acquire-errors", "acquire-s"},
	"Spread":      {"p50-ns", "p99-ns", "max-ns", "cycles/s", "allocs/op", "errors"},
	"Held":        {"cpu-cores", "cmds/s/node", "rounds/s/node", "server-cmds/s/node", "rounds/node/tick", "lost"},
}

// fmtValue prints durations in ns units human-readably.
func fmtValue(unit string, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if strings.HasSuffix(unit, "-ns") {
		switch {
		case v >= 1e9:
			return fmt.Sprintf("%.2fs", v/1e9)
		case v >= 1e6:
			return fmt.Sprintf("%.2fms", v/1e6)
		default:
			return fmt.Sprintf("%.0fµs", v/1e3)
		}
	}
	if v >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// printSummary prints, per scenario, the median [min..max] of each unit.
func printSummary(w io.Writer, rp *harness.Report) {
	fmt.Fprintln(w, "\n# Summary: median [min..max] over repetitions")
	var scen []string
	for _, r := range rp.Results {
		if !slices.Contains(scen, r.Scenario) {
			scen = append(scen, r.Scenario)
		}
	}
	for _, s := range scen {
		units := summaryUnits[s]
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\n%s\tlib\t%s\n", s, strings.Join(units, "\t"))
		for _, r := range rp.Results {
			if r.Scenario != s {
				continue
			}
			var cells []string
			for _, u := range units {
				st, ok := r.Stat(u)
				if !ok {
					cells = append(cells, "-")
					continue
				}
				cell := fmtValue(u, st.Median)
				if st.Min != st.Max && len(r.Reps) > 1 {
					cell += " [" + fmtValue(u, st.Min) + ".." + fmtValue(u, st.Max) + "]"
				}
				cells = append(cells, cell)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Case, r.Lib, strings.Join(cells, "\t"))
		}
		_ = tw.Flush()
	}
}

func median(rp *harness.Report, scenario, cas, lib, unit string) float64 {
	r := rp.Find(scenario, cas, lib)
	if r == nil {
		return math.NaN()
	}
	st, _ := r.Stat(unit)
	return st.Median
}

// ratios computes quorumlock against redsync and the floor, with the
// issue's targets.
func ratios(rp *harness.Report) []harness.Ratio {
	var out []harness.Ratio
	add := func(name, sc, numCase, numLib, denCase, denLib, unit, op string, target float64, hasTarget bool, comment string) {
		num, den := median(rp, sc, numCase, numLib, unit), median(rp, sc, denCase, denLib, unit)
		if math.IsNaN(num) || math.IsNaN(den) {
			return
		}
		r := harness.Ratio{Name: name, Num: fmt.Sprintf("%s/%s/lib=%s %s", sc, numCase, numLib, unit),
			Den: fmt.Sprintf("%s/%s/lib=%s %s", sc, denCase, denLib, unit), Value: num / den, Comment: comment}
		if den == 0 {
			r.Value = math.Inf(1)
			if num == 0 {
				r.Value = 1
			}
		}
		if hasTarget {
			met := false
			switch op {
			case ">=":
				met = r.Value >= target
			case "<=":
				met = r.Value <= target
				r.LowerIsB = true
			}
			r.Target = fmt.Sprintf("%s %g", op, target)
			r.Met = &met
		}
		out = append(out, r)
	}
	// absolute: a value compared with a constant.
	abs := func(name, sc, cas, lib, unit, op string, target float64, comment string) {
		v := median(rp, sc, cas, lib, unit)
		if math.IsNaN(v) {
			return
		}
		r := harness.Ratio{Name: name, Num: fmt.Sprintf("%s/%s/lib=%s %s", sc, cas, lib, unit), Den: "1", Value: v, Comment: comment}
		// Use the worst repetition for absolute targets.
		if res := rp.Find(sc, cas, lib); res != nil {
			st, _ := res.Stat(unit)
			r.Value = st.Max
		}
		r.LowerIsB = true
		if op != "" {
			met := (op == "<=" && r.Value <= target) || (op == "==" && r.Value == target)
			r.Target, r.Met = fmt.Sprintf("%s %g", op, target), &met
		}
		out = append(out, r)
	}
	const u = "Uncontended"
	const p, pc = "Parallel", "goroutines=16/nodes=5"
	const c = "Contended"
	const d, dh, dd = "Degraded", "nodes=5/faults=none", "nodes=5/faults=blackhole+paused"
	for _, ql := range []string{libQL, libQLRueidis} {
		pre := "" // the go-redis node keeps the names of the targets
		if ql != libQL {
			pre = ql + ": "
		}
		add(pre+"uncontended 5 nodes cycles/s vs redsync", u, "nodes=5", ql, "nodes=5", libRS, "cycles/s", ">=", 1.3, true, "")
		add(pre+"uncontended 5 nodes allocs/cycle vs redsync", u, "nodes=5", ql, "nodes=5", libRS, "allocs/op", "<=", 0.5, true, "")
		add(pre+"uncontended 5 nodes allocs/cycle vs redsync (core v2: at most redsync's)", u, "nodes=5", ql, "nodes=5", libRS, "allocs/op", "<=", 1, true, "")
		for _, n := range []string{"nodes=1", "nodes=3", "nodes=5", "nodes=7", "nodes=9"} {
			add(pre+"uncontended "+n+" cycles/s vs redsync", u, n, ql, n, libRS, "cycles/s", "", 0, false, "")
			add(pre+"uncontended "+n+" cycles/s vs floor", u, n, ql, n, libFloor, "cycles/s", "", 0, false, "")
		}
		add(pre+"uncontended 5 nodes p99 vs redsync", u, "nodes=5", ql, "nodes=5", libRS, "p99-ns", "", 0, false, "lower is better")
		add(pre+"parallel 16 goroutines cycles/s vs redsync", p, pc, ql, pc, libRS, "cycles/s", ">=", 1.5, true, "")
		add(pre+"parallel 16 goroutines cycles/s vs floor", p, pc, ql, pc, libFloor, "cycles/s", "", 0, false, "")
		add(pre+"parallel 16 goroutines p99 vs redsync", p, pc, ql, pc, libRS, "p99-ns", "", 0, false, "lower is better")
		for _, cas := range []string{"goroutines=32/retry=default", "goroutines=8/retry=default", "goroutines=32/retry=1ms", "goroutines=8/retry=1ms"} {
			target := cas == "goroutines=32/retry=default"
			add(pre+"contended "+cas+" wait p99 vs redsync", c, cas, ql, cas, libRS, "wait-p99-ns", "<=", 0.2, target, "lower is better")
			add(pre+"contended "+cas+" acq/s vs redsync", c, cas, ql, cas, libRS, "acq/s", ">=", 1, target, "")
			if target {
				abs(pre+"contended "+cas+" "+ql+" failed acquisitions (worst rep)", c, cas, ql, "failed", "==", 0, "")
				add(pre+"contended "+cas+" acq/s notifications on vs off", c, cas, ql, cas, noNotify[ql], "acq/s", ">=", 0.9, true, "")
				abs(pre+"contended "+cas+" handoff p50 in round trips of one node under the batch's load (worst rep)", c, cas, ql, "handoff-p50-rtt", "<=", 3, "")
				abs(pre+"contended "+cas+" handoff p50 in round trips of one idle node (worst rep)", c, cas, ql, "handoff-p50-rtt-idle", "", 0, "")
				abs(pre+"contended "+cas+" handoff from the Release call, p50 in round trips of one node under load (worst rep)", c, cas, ql, "handoff-start-p50-rtt", "", 0, "")
				abs(pre+"contended "+cas+" notifications off: handoff p50 in round trips of one node (worst rep)", c, cas, noNotify[ql], "handoff-p50-rtt", "", 0, "")
			}
			add(pre+"contended "+cas+" handoff p99 vs redsync", c, cas, ql, cas, libRS, "handoff-p99-ns", "", 0, false, "lower is better")
			if strings.HasSuffix(cas, "retry=default") {
				add(pre+"contended "+cas+" acq/s vs floor", c, cas, ql, cas, libFloor, "acq/s", "", 0, false, "")
			}
		}
		const sl, sh, ss = "Silent", "nodes=5/faults=none", "nodes=5/faults=silent"
		add(pre+"silent node: contended try p99 vs its healthy p99", sl, ss, ql, sh, ql, "p99-ns", "<=", 2, true, "")
		add(pre+"silent node: contended try p99 vs redsync (1 try)", sl, ss, ql, ss, libRS, "p99-ns", "", 0, false, "lower is better")
		add(pre+"silent node: contended try p99 vs floor", sl, ss, ql, ss, libFloor, "p99-ns", "", 0, false, "lower is better")
		abs(pre+"silent node: contended tries that acquired a held lock (worst rep)", sl, ss, ql, "acquired", "==", 0, "")
		if ql == libQL {
			add("silent node: redsync (1 try) p99 vs its healthy p99", sl, ss, libRS, sh, libRS, "p99-ns", "", 0, false, "")
			add("silent node: floor p99 vs its healthy p99", sl, ss, libFloor, sh, libFloor, "p99-ns", "", 0, false, "")
		}
		add(pre+"degraded "+ql+" acquire p99 vs its healthy p99", d, dd, ql, dh, ql, "p99-ns", "<=", 2, true, "")
		if ql == libQL {
			add("degraded redsync acquire p99 vs its healthy p99", d, dd, libRS, dh, libRS, "p99-ns", "", 0, false, "")
			add("degraded redsync-failfast acquire p99 vs its healthy p99", d, dd, libRSFast, dh, libRSFast, "p99-ns", "", 0, false, "")
		}
		add(pre+"degraded acquire p99 vs redsync", d, dd, ql, dd, libRS, "p99-ns", "", 0, false, "lower is better")
		add(pre+"degraded acquire p99 vs redsync-failfast", d, dd, ql, dd, libRSFast, "p99-ns", "", 0, false, "lower is better")
	}
	// The share of waiting time the lock sat free, per library (no target:
	// the floor and redsync show what is possible).
	for _, cas := range []string{"goroutines=8/retry=default", "goroutines=32/retry=default", "goroutines=8/retry=1ms", "goroutines=32/retry=1ms"} {
		for _, lib := range []string{libQL, libQLRueidis, libRS, libFloor} {
			abs("contended "+cas+" "+lib+" share of waiting time the lock sat free (worst rep)", c, cas, lib, "free-frac", "", 0, "")
		}
	}
	splitRatios(add, abs)
	scaleRatios(abs)
	spreadRatios(add)
	const h = "Held"
	for _, r := range rp.Results {
		if r.Scenario != h || !strings.HasPrefix(r.Lib, libQL) {
			continue
		}
		if r.Case == "locks=10000/nodes=5" {
			abs("held 10,000 locks: "+r.Lib+" round trips per node per tick (worst node)", h, r.Case, r.Lib, "rounds/node/tick", "<=", 1, "")
		}
		add("held "+r.Case+" "+r.Lib+" CPU vs redsync", h, r.Case, r.Lib, r.Case, libRS, "cpu-cores", "", 0, false, "lower is better")
		add("held "+r.Case+" "+r.Lib+" round trips vs redsync", h, r.Case, r.Lib, r.Case, libRS, "rounds/s/node", "", 0, false, "lower is better")
	}
	return out
}

func printRatios(w io.Writer, rs []harness.Ratio) {
	fmt.Fprintln(w, "\n# Ratios (quorumlock / baseline, medians of one run)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ratio\tvalue\ttarget\tmet")
	for _, r := range rs {
		met := ""
		if r.Met != nil {
			met = "MISSED"
			if *r.Met {
				met = "met"
			}
		}
		fmt.Fprintf(tw, "%s\t%.3g\t%s\t%s\n", r.Name, r.Value, r.Target, met)
	}
	_ = tw.Flush()
}
