package main

import (
	"image/color"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// labels parses `name{a="x",b="y"}` into its name and labels.
func labels(series string) (string, map[string]string) {
	name, rest, ok := strings.Cut(series, "{")
	out := map[string]string{}
	if !ok {
		return name, out
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = strings.Trim(v, `"`)
	}
	return name, out
}

// line is one legend entry's points.
type line struct {
	name string
	xy   plotter.XYs
}

// sumBy returns, per scrape, the sum of name's series grouped by the label
// values of by, keeping series for which keep is true.
func sumBy(scrapes []scrape, name string, by []string, keep func(map[string]string) bool) map[string][]float64 {
	out := map[string][]float64{}
	for i, s := range scrapes {
		for series, v := range s.series {
			n, l := labels(series)
			if n != name || (keep != nil && !keep(l)) {
				continue
			}
			var parts []string
			for _, b := range by {
				parts = append(parts, l[b])
			}
			g := strings.Join(parts, " ")
			if out[g] == nil {
				out[g] = make([]float64, len(scrapes))
			}
			out[g][i] += v
		}
	}
	return out
}

// back is the index of the scrape a window before scrape i.
func back(scrapes []scrape, i int, window time.Duration) int {
	j := i
	for j > 0 && scrapes[i].at-scrapes[j-1].at <= window.Seconds() {
		j--
	}
	return j
}

// rates turns counters into per-second rates over window.
func rates(scrapes []scrape, groups map[string][]float64, window time.Duration, suffix string) []line {
	var out []line
	for g, vals := range groups {
		l := line{name: g + suffix}
		for i := range scrapes {
			j := back(scrapes, i, window)
			if j == i {
				continue
			}
			l.xy = append(l.xy, plotter.XY{X: scrapes[i].at, Y: (vals[i] - vals[j]) / (scrapes[i].at - scrapes[j].at)})
		}
		out = append(out, l)
	}
	return out
}

// levels plots values as they are (gauges, cumulative counters).
func levels(scrapes []scrape, groups map[string][]float64, suffix string) []line {
	var out []line
	for g, vals := range groups {
		l := line{name: g + suffix}
		for i := range scrapes {
			l.xy = append(l.xy, plotter.XY{X: scrapes[i].at, Y: vals[i]})
		}
		out = append(out, l)
	}
	return out
}

// quantiles is histogram_quantile(q, rate(name_bucket{keep}[window])) by
// class, with Prometheus' linear interpolation within a bucket.
func quantiles(scrapes []scrape, name string, q float64, window time.Duration, keep func(map[string]string) bool, suffix string) []line {

	bySeries := sumBy(scrapes, name+"_bucket", []string{"class", "le"}, keep)
	classes := map[string]map[float64][]float64{}
	for g, vals := range bySeries {
		class, le, _ := strings.Cut(g, " ")
		bound := math.Inf(1)
		if le != "+Inf" {
			bound, _ = strconv.ParseFloat(le, 64)
		}
		if classes[class] == nil {
			classes[class] = map[float64][]float64{}
		}
		classes[class][bound] = vals
	}
	var out []line
	for class, buckets := range classes {
		bounds := make([]float64, 0, len(buckets))
		for b := range buckets {
			bounds = append(bounds, b)
		}
		sort.Float64s(bounds)
		l := line{name: class + suffix}
		for i := range scrapes {
			j := back(scrapes, i, window)
			if j == i {
				continue
			}
			total := buckets[math.Inf(1)][i] - buckets[math.Inf(1)][j]
			if total <= 0 {
				continue
			}
			rank, prevBound, prevCount := q*total, 0.0, 0.0
			for _, b := range bounds {
				c := buckets[b][i] - buckets[b][j]
				if c >= rank {
					if math.IsInf(b, 1) {
						b = bounds[len(bounds)-2]
						l.xy = append(l.xy, plotter.XY{X: scrapes[i].at, Y: b})
					} else {
						l.xy = append(l.xy, plotter.XY{X: scrapes[i].at, Y: prevBound + (b-prevBound)*(rank-prevCount)/max(c-prevCount, 1e-9)})
					}
					break
				}
				prevBound, prevCount = b, c
			}
		}
		out = append(out, l)
	}
	return out
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

func panel(title, ylabel string, lines []line) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds into the demo"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	slices.SortFunc(lines, func(a, b line) int { return strings.Compare(a.name, b.name) })
	lines = slices.DeleteFunc(lines, func(l line) bool { // an all-zero line only crowds the legend
		return !slices.ContainsFunc(l.xy, func(p plotter.XY) bool { return p.Y != 0 })
	})
	for i, l := range lines {
		pl, err := plotter.NewLine(l.xy)
		if err != nil {
			continue
		}
		pl.Color = palette[i%len(palette)]
		pl.Width = vg.Points(1.5)
		p.Add(pl)
		p.Legend.Add(l.name, pl)
	}
	return p
}

func render(out, caption string, scrapes []scrape, window time.Duration) error {
	acquired := func(l map[string]string) bool { return l["result"] == "acquired" }
	var lossLines []line
	lossLines = append(lossLines, levels(scrapes, sumBy(scrapes, "quorumlock_losses_total", []string{"class", "reason"}, nil), " lost")...)
	lossLines = append(lossLines, levels(scrapes, sumBy(scrapes, "quorumlock_fenced_rejections_total", []string{"class"}, nil), " fenced rejection")...)
	gauges := levels(scrapes, sumBy(scrapes, "quorumlock_waiters", []string{"class"}, nil), " waiters")
	gauges = append(gauges, levels(scrapes, sumBy(scrapes, "quorumlock_held_locks", nil, nil), "held (all)")...)
	latency := quantiles(scrapes, "quorumlock_acquire_duration_seconds", 0.5, window, acquired, " p50")
	latency = append(latency, quantiles(scrapes, "quorumlock_acquire_duration_seconds", 0.99, window, acquired, " p99")...)
	for i := range latency {
		for j := range latency[i].xy {
			latency[i].xy[j].Y *= 1000
		}
	}
	panels := []*plot.Plot{
		panel("Acquisitions per second by class", "acquired/s", rates(scrapes, sumBy(scrapes, "quorumlock_acquisitions_total", []string{"class"}, acquired), window, "")),
		panel("Acquisition latency (wait) by class", "ms", latency),
		panel("Contention: lost attempts per second", "attempts/s", rates(scrapes, sumBy(scrapes, "quorumlock_contended_attempts_total", []string{"reason"}, nil), window, "")),
		panel("Waiters and held locks", "calls / locks", gauges),
		panel("Losses and fenced rejections (cumulative)", "count", lossLines),
		panel("Node errors per second", "errors/s", rates(scrapes, sumBy(scrapes, "quorumlock_node_errors_total", []string{"node", "op"}, nil), window, "")),
	}
	const cols, rows = 2, 3
	img := vgimg.New(vg.Points(1200), vg.Points(1150))
	dc := draw.New(img)
	head := dc
	head.Min.Y = dc.Max.Y - vg.Points(30)
	sty := plot.New().Title.TextStyle // a style with the default font loaded
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	head.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(15)}, caption)
	body := dc
	body.Max.Y -= vg.Points(30)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = panels[r*cols : (r+1)*cols]
	}
	canvases := plot.Align(grid, tiles, body)
	for r := range grid {
		for c := range grid[r] {
			grid[r][c].Draw(canvases[r][c])
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
