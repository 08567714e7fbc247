package bench

import (
	"io"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// monitorFigure is the monitor's first picture (time from start to every
// lease drawn) and the heap it holds then, against the number of leases:
// the monitor-load-N rows and monitor-load at --monitor-leases, side by
// side on logarithmic axes.
func monitorFigure(rep *Report) (io.WriterTo, error) {
	var load, heap plotter.XYs
	for _, res := range rep.Results {
		n, ok := loadRowLeases(res, rep.Settings.MonitorLeases)
		if !ok || res.Error != "" || res.P50ms <= 0 {
			continue
		}
		load = append(load, plotter.XY{X: float64(n), Y: res.P50ms / 1000})
		if res.HeapMB > 0 {
			heap = append(heap, plotter.XY{X: float64(n), Y: res.HeapMB})
		}
	}
	if len(load) == 0 {
		return nil, errNoData
	}
	byLeases := func(a, b plotter.XY) int { return int(a.X - b.X) }
	slices.SortFunc(load, byLeases)
	slices.SortFunc(heap, byLeases)
	left, err := monitorPanel("The monitor's first picture of every lease", "seconds", " s", load)
	if err != nil {
		return nil, err
	}
	if len(heap) == 0 {
		return svgOf(left)
	}
	right, err := monitorPanel("The Go heap it holds then", "MB", " MB", heap)
	if err != nil {
		return nil, err
	}
	return svgOfRow(left, right), nil
}

// monitorPanel is one of monitorFigure's panels, both axes logarithmic,
// each point labelled with its value and unit.
func monitorPanel(title, y, unit string, xys plotter.XYs) (*plot.Plot, error) {
	p := newFigure(title, "live leases (log scale)", y+", log scale")
	logAxis(&p.X)
	logAxis(&p.Y)
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = colourLeasetop, vg.Points(2)
	points.Color, points.Shape, points.Radius = colourLeasetop, draw.CircleGlyph{}, vg.Points(4)
	labels, err := valueLabels(xys, unit)
	if err != nil {
		return nil, err
	}
	p.Add(line, points, labels)
	// Room for the labels above the highest point and left of the first.
	p.Y.Max *= 2
	p.X.Min /= 2
	return p, nil
}

// loadRowLeases is how many leases a monitor-load row measured: N of
// monitor-load-N, the run's --monitor-leases for monitor-load.
func loadRowLeases(res Result, monitorLeases int) (int, bool) {
	if res.Name == "monitor-load" {
		return monitorLeases, monitorLeases > 0
	}
	s, ok := strings.CutPrefix(res.Name, "monitor-load-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// valueLabels writes each point's value, with unit, above it.
func valueLabels(xys plotter.XYs, unit string) (*plotter.Labels, error) {
	texts := make([]string, len(xys))
	for i, xy := range xys {
		texts[i] = numberLabel(xy.Y) + unit
	}
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return nil, err
	}
	labels.Offset = vg.Point{X: -vg.Millimeter * 4, Y: vg.Millimeter * 2}
	return labels, nil
}
