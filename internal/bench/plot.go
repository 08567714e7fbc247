package bench

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/leasetop/leasetop/internal/progress"
)

// A figure is one picture bench --plot draws from a report: SVG, for
// docs/BENCHMARKS.md. Its draw returns errNoData when the report lacks the
// results it needs (their workloads did not run).
type figure struct {
	file  string // handoff.svg
	needs string // what to run for it
	draw  func(rep *Report) (io.WriterTo, error)
}

// errNoData: the report lacks a figure's results.
var errNoData = errors.New("no results")

// figures are the pictures, in the order docs/BENCHMARKS.md shows them.
func figures() []figure {
	return []figure{
		{"handoff.svg", "--only handoff", handoffFigure},
		{"keepalive.svg", "--only keepalive, with the server on this machine (its CPU is read from /proc)", keepaliveFigure},
		{"monitor.svg", "--only monitor", monitorFigure},
		{"seed.svg", "--only seed-cycle,cycle,seed-renew,renew", seedFigure},
	}
}

// FigureNames are the files WritePlots may write.
func FigureNames() []string {
	var out []string
	for _, f := range figures() {
		out = append(out, f.file)
	}
	return out
}

// WritePlots writes into dir, which must exist, an SVG for every figure
// the report has the results of, each whole or not at all (a temporary
// file renamed). It returns the files written, and for each figure it could
// not draw what to run for it.
func WritePlots(rep *Report, dir string) (written, missing []string, err error) {
	for _, f := range figures() {
		wt, err := f.draw(rep)
		if errors.Is(err, errNoData) {
			missing = append(missing, fmt.Sprintf("%s: run %s", f.file, f.needs))
			continue
		}
		if err != nil {
			return written, missing, fmt.Errorf("plot %s: %w", f.file, err)
		}
		path := filepath.Join(dir, f.file)
		if err := writeWhole(path, wt); err != nil {
			return written, missing, err
		}
		written = append(written, path)
	}
	return written, missing, nil
}

// writeWhole writes wt to path through a temporary file in the same folder.
func writeWhole(path string, wt io.WriterTo) error {
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// The figures' size and colours: leasetop's own in blue, the baselines it
// is compared with in grey and orange.
var (
	figureWidth, figureHeight = 16 * vg.Centimeter, 10 * vg.Centimeter
	colourLeasetop            = color.RGBA{R: 0x09, G: 0x69, B: 0xda, A: 0xff}
	colourBaseline            = color.RGBA{R: 0x6e, G: 0x77, B: 0x81, A: 0xff}
	colourSlow                = color.RGBA{R: 0xbc, G: 0x4c, B: 0x00, A: 0xff}
)

// newFigure is a plot with a title, axis labels and a grid.
func newFigure(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	p.Add(newGrid())
	return p
}

// svgOf renders one plot.
func svgOf(p *plot.Plot) (io.WriterTo, error) {
	return p.WriterTo(figureWidth, figureHeight, "svg")
}

// svgOfRow renders plots side by side, their axes aligned.
func svgOfRow(plots ...*plot.Plot) io.WriterTo {
	c := vgsvg.New(figureWidth*vg.Length(len(plots))*0.75, figureHeight)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Centimeter, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, draw.New(c))
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return c
}

// logTicks marks 1, 2 and 5 of each decade, labelled (1,000 not 1e+03),
// and the other integers of the decade unlabelled: a log axis that reads
// at a glance.
type logTicks struct{}

// Ticks implements plot.Ticker. Over more than two decades only the
// powers of ten are labelled, so that the labels do not run together.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	wide := math.Log10(hi/lo) > 2
	var out []plot.Tick
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		for m := 1.0; m < 10; m++ {
			v := d * m
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = numberLabel(v)
			}
			out = append(out, t)
		}
	}
	return out
}

// plainTicks are gonum's default ticks, labelled as numberLabel writes
// (25, not 25.00).
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = numberLabel(ticks[i].Value)
		}
	}
	return ticks
}

// logAxis makes a logarithmic axis with logTicks.
func logAxis(a *plot.Axis) { a.Scale, a.Tick.Marker = plot.LogScale{}, logTicks{} }

// numberLabel writes v for an axis or a point: 1,000,000; 250; 0.5.
func numberLabel(v float64) string {
	if v >= 1000 {
		return progress.Count(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// result finds the result named name that has numbers.
func (r *Report) result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name && res.Error == "" {
			return res, true
		}
	}
	return Result{}, false
}
