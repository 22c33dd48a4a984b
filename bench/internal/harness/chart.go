package harness

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Panel is one bar chart: for each case (x axis) one bar per series
// (library), the bar at the median and a whisker from min to max.
type Panel struct {
	Title  string
	YLabel string
	Cases  []string
	Series []Series
	LogY   bool
}

// Series is one library's values, indexed like Panel.Cases; a NaN value
// draws no bar.
type Series struct {
	Name          string
	Med, Min, Max []float64
}

// Palette colours series in order.
var Palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // quorumlock: blue
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // redsync: red
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // floor: grey
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// bars draws one series of a grouped bar chart in data coordinates.
type bars struct {
	s        Series
	idx, cnt int
	color    color.Color
	logY     bool
}

const groupWidth = 0.8 // share of one case slot taken by its bars

func (b *bars) x(i int) (lo, mid, hi float64) {
	w := groupWidth / float64(b.cnt)
	lo = float64(i) - groupWidth/2 + float64(b.idx)*w
	return lo, lo + w/2, lo + w
}

func (b *bars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	base := 0.0
	if b.logY {
		base = plt.Y.Min
	}
	for i, v := range b.s.Med {
		if math.IsNaN(v) || (b.logY && v <= 0) {
			continue
		}
		lo, mid, hi := b.x(i)
		x0, x1 := trX(lo), trX(hi)
		y0, y1 := trY(base), trY(v)
		c.FillPolygon(b.color, c.ClipPolygonY([]vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}))
		if i < len(b.s.Min) && i < len(b.s.Max) && !math.IsNaN(b.s.Min[i]) && !math.IsNaN(b.s.Max[i]) {
			sty := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
			xm := trX(mid)
			lo, hi := b.s.Min[i], b.s.Max[i]
			if b.logY {
				lo, hi = max(lo, plt.Y.Min), max(hi, plt.Y.Min)
			}
			c.StrokeLines(sty, c.ClipLinesY([]vg.Point{{X: xm, Y: trY(lo)}, {X: xm, Y: trY(hi)}})...)
			cap := (x1 - x0) / 4
			c.StrokeLines(sty, c.ClipLinesY([]vg.Point{{X: xm - cap, Y: trY(lo)}, {X: xm + cap, Y: trY(lo)}})...)
			c.StrokeLines(sty, c.ClipLinesY([]vg.Point{{X: xm - cap, Y: trY(hi)}, {X: xm + cap, Y: trY(hi)}})...)
		}
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = -0.5, float64(len(b.s.Med))-0.5
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for i, v := range b.s.Med {
		for _, w := range []float64{v, at(b.s.Min, i), at(b.s.Max, i)} {
			if math.IsNaN(w) || (b.logY && w <= 0) {
				continue
			}
			ymin, ymax = min(ymin, w), max(ymax, w)
		}
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 1, 1
	}
	if b.logY {
		ymin /= 2
	} else {
		ymin = 0
	}
	if b.logY {
		return xmin, xmax, ymin, ymax * 3
	}
	return xmin, xmax, ymin, ymax * 1.3
}

func at(vs []float64, i int) float64 {
	if i < len(vs) {
		return vs[i]
	}
	return math.NaN()
}

func (b *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(b.color, pts)
}

func (p Panel) plot() (*plot.Plot, error) {
	plt := plot.New()
	plt.Title.Text = p.Title
	plt.Y.Label.Text = p.YLabel
	if p.LogY {
		plt.Y.Scale = plot.LogScale{}
		plt.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	plt.Legend.Top = true
	plt.Legend.Left = false
	for j, s := range p.Series {
		if len(s.Med) != len(p.Cases) {
			return nil, fmt.Errorf("series %q has %d values for %d cases", s.Name, len(s.Med), len(p.Cases))
		}
		b := &bars{s: s, idx: j, cnt: len(p.Series), color: Palette[j%len(Palette)], logY: p.LogY}
		plt.Add(b)
		plt.Legend.Add(s.Name, b)
	}
	plt.Add(plotter.NewGrid())
	plt.NominalX(p.Cases...)
	plt.X.Min, plt.X.Max = -0.5, float64(len(p.Cases))-0.5
	return plt, nil
}

// SaveChart draws panels side by side into one PNG at path.
func SaveChart(path string, panels ...Panel) error {
	if len(panels) == 0 {
		return fmt.Errorf("no panels")
	}
	plots := make([][]*plot.Plot, 1)
	for _, p := range panels {
		plt, err := p.plot()
		if err != nil {
			return err
		}
		plots[0] = append(plots[0], plt)
	}
	w := vg.Length(len(panels)) * 5 * vg.Inch
	img := vgimg.New(w, 4*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, t, dc)
	for i, plt := range plots[0] {
		plt.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
