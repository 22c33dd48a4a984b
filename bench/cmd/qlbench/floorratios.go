package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
)

// floorCases are the cases whose every library is compared with redsync and
// with the raw floor, in the summary and in results.json.
var floorCases = []struct{ scenario, cas, label string }{
	{"Uncontended", "nodes=1", "uncontended 1 node"},
	{"Uncontended", "nodes=5", "uncontended 5 nodes"},
	{"Parallel", "goroutines=16/nodes=5", "parallel 16 goroutines"},
}

// floorTargets are issue 16's targets against the raw floor: the minimum
// ratio of cycles/s, per library and case label.
var floorTargets = map[[2]string]float64{
	{libQLRueidis, "uncontended 5 nodes"}:    0.9,
	{libQLRueidis, "parallel 16 goroutines"}: 0.95,
}

// maxCommandsVsRaw is issue 16's target on server work: at most 1.3 times
// the commands of a plain Redlock cycle (the raw floor's: SET, EVALSHA,
// GET, DEL per node).
const maxCommandsVsRaw = 1.3

// casesLibs returns the libraries with a result in scenario/cas, in chart
// order.
func casesLibs(rp *harness.Report, scenario, cas string) []string {
	var libs []string
	for _, r := range rp.Results {
		if r.Scenario == scenario && r.Case == cas {
			libs = append(libs, r.Lib)
		}
	}
	slices.SortStableFunc(libs, func(a, b string) int { return libRank(a) - libRank(b) })
	return libs
}

// floorRatios are every library's cycles/s against redsync's and the raw
// floor's, and its server commands per cycle against the raw floor's.
func floorRatios(rp *harness.Report) []harness.Ratio {
	var out []harness.Ratio
	ratio := func(name, sc, cas, lib, base, unit string) (harness.Ratio, bool) {
		num, den := median(rp, sc, cas, lib, unit), median(rp, sc, cas, base, unit)
		if math.IsNaN(num) || math.IsNaN(den) || den == 0 {
			return harness.Ratio{}, false
		}
		return harness.Ratio{Name: name,
			Num:   fmt.Sprintf("%s/%s/lib=%s %s", sc, cas, lib, unit),
			Den:   fmt.Sprintf("%s/%s/lib=%s %s", sc, cas, base, unit),
			Value: num / den}, true
	}
	for _, fc := range floorCases {
		for _, lib := range casesLibs(rp, fc.scenario, fc.cas) {
			if lib != libRS {
				if r, ok := ratio(fc.label+" "+lib+" cycles/s vs redsync", fc.scenario, fc.cas, lib, libRS, "cycles/s"); ok {
					out = append(out, r)
				}
			}
			if lib == libRaw {
				continue
			}
			if r, ok := ratio(fc.label+" "+lib+" cycles/s vs raw floor", fc.scenario, fc.cas, lib, libRaw, "cycles/s"); ok {
				if t, has := floorTargets[[2]string{lib, fc.label}]; has {
					met := r.Value >= t
					r.Target, r.Met = fmt.Sprintf(">= %g", t), &met
				}
				out = append(out, r)
			}
			if lib != libQL && lib != libQLRueidis {
				continue // the other clients run the plain cycle: the table shows their counts
			}
			// What the client adds to its own scripts' cost on the nodes.
			if r, ok := ratio(fc.label+" "+lib+" cycles/s vs raw-record floor", fc.scenario, fc.cas, lib, libRawRecord, "cycles/s"); ok {
				out = append(out, r)
			}
			// Against what the same Redis client allows a plain Redlock.
			if r, ok := ratio(fc.label+" "+lib+" cycles/s vs rueidis floor", fc.scenario, fc.cas, lib, libRueidisFloor, "cycles/s"); ok && lib == libQLRueidis {
				out = append(out, r)
			}
			if r, ok := ratio(fc.label+" "+lib+" server commands/cycle vs raw floor", fc.scenario, fc.cas, lib, libRaw, "server-cmds/op"); ok {
				met := r.Value <= maxCommandsVsRaw
				r.Target, r.Met, r.LowerIsB = fmt.Sprintf("<= %g", maxCommandsVsRaw), &met, true
				out = append(out, r)
			}
		}
	}
	return out
}

// printFloorTable prints, for each of floorCases, every library's cycles/s
// with its ratios to redsync and to the raw floor, its allocations and (in
// the uncontended scenario) the server's commands per cycle.
func printFloorTable(w io.Writer, rp *harness.Report) {
	fmt.Fprintln(w, "\n# Against redsync and the raw floor (medians of one run)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tlib\tcycles/s\tx redsync\tx raw\tallocs/op\tserver-cmds/op")
	for _, fc := range floorCases {
		rs := median(rp, fc.scenario, fc.cas, libRS, "cycles/s")
		raw := median(rp, fc.scenario, fc.cas, libRaw, "cycles/s")
		for _, lib := range casesLibs(rp, fc.scenario, fc.cas) {
			cps := median(rp, fc.scenario, fc.cas, lib, "cycles/s")
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", fc.label, lib, fmtValue("cycles/s", cps),
				fmtRatio(cps, rs), fmtRatio(cps, raw),
				fmtValue("allocs/op", median(rp, fc.scenario, fc.cas, lib, "allocs/op")),
				fmtValue("server-cmds/op", median(rp, fc.scenario, fc.cas, lib, "server-cmds/op")))
		}
	}
	_ = tw.Flush()
}

// fmtRatio prints num/den as "0.92x", or "-" when either is missing.
func fmtRatio(num, den float64) string {
	if math.IsNaN(num) || math.IsNaN(den) || den == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", num/den)
}
