package bench

import (
	"fmt"
	"io"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// keepaliveFigure is the server's CPU per lease kept alive against how
// many leases one call renews (lease.renew_many of 1, 100 and 1000), with
// one lease a call by lease.renew and by the seed's per-key UPDATE beside
// it. It needs the server's CPU, which bench reads from /proc when the
// server runs on its machine.
func keepaliveFigure(rep *Report) (io.WriterTo, error) {
	var batch plotter.XYs
	for _, n := range []int{1, 100, 1000} {
		if res, ok := rep.result(fmt.Sprintf("keepalive-%d", n)); ok && res.ServerCPUus > 0 {
			batch = append(batch, plotter.XY{X: float64(n), Y: res.ServerCPUus})
		}
	}
	if len(batch) == 0 {
		return nil, errNoData
	}
	p := newFigure("Keeping leases alive: the server's CPU per lease renewed",
		"leases renewed per call (log scale)", "server CPU per renewal (µs, log scale)")
	logAxis(&p.X)
	logAxis(&p.Y)
	line, points, err := plotter.NewLinePoints(batch)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = colourLeasetop, vg.Points(2)
	points.Color, points.Shape, points.Radius = colourLeasetop, draw.CircleGlyph{}, vg.Points(4)
	labels, err := valueLabels(batch, " µs")
	if err != nil {
		return nil, err
	}
	p.Add(line, points, labels)
	p.Legend.Add("lease.renew_many (what lease.Client sends)", line, points)
	for _, single := range []struct {
		name, label string
		glyph       draw.GlyphDrawer
		res         Result
	}{
		{name: "keepalive-renew", label: "lease.renew, one a call", glyph: draw.SquareGlyph{}},
		{name: "keepalive-seed", label: "the seed's UPDATE", glyph: draw.TriangleGlyph{}},
	} {
		res, ok := rep.result(single.name)
		if !ok || res.ServerCPUus <= 0 {
			continue
		}
		s, err := plotter.NewScatter(plotter.XYs{{X: 1, Y: res.ServerCPUus}})
		if err != nil {
			return nil, err
		}
		s.Color, s.Shape, s.Radius = colourBaseline, single.glyph, vg.Points(5)
		if single.name == "keepalive-seed" {
			s.Color = colourSlow
		}
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("%s: %s µs", single.label, numberLabel(res.ServerCPUus)), s)
	}
	// Room above the curve for the legend (on the left: its text then runs
	// into the free space, whatever font the viewer draws it in), and right
	// of the last point for its label.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Centimeter
	p.Y.Max *= 6
	p.X.Max *= 1.5
	return svgOf(p)
}
