package bench

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// handoffFigure is the handoff latency's whole distribution, as a
// cumulative curve per waiter: leasetop's (notified) against polling every
// 100 ms and every second. The time axis is logarithmic: the waiter's
// milliseconds and the polls' hundreds share it.
func handoffFigure(rep *Report) (io.WriterTo, error) {
	p := newFigure("Handoff latency: leasetop's waiter against polling",
		"release → the waiter holds the lease (ms, log scale)", "share of handoffs at or below")
	logAxis(&p.X)
	// Room above the curves for the legend; the ticks stop at all of them.
	p.Y.Min, p.Y.Max = 0, 1.32
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25, Label: "25%"},
		{Value: 0.5, Label: "50%"}, {Value: 0.75, Label: "75%"}, {Value: 1, Label: "100%"}})
	curves := 0
	for _, c := range []struct {
		name  string
		label string
		col   color.Color
	}{
		{"handoff-notify", "leasetop (LISTEN/NOTIFY)", colourLeasetop},
		{"handoff-poll-100ms", "polling every 100 ms", colourBaseline},
		{"handoff-poll-1s", "polling every second", colourSlow},
	} {
		res, ok := rep.result(c.name)
		if !ok || len(res.Percentiles) != 101 {
			continue
		}
		xys := make(plotter.XYs, len(res.Percentiles))
		for i, v := range res.Percentiles {
			xys[i] = plotter.XY{X: max(v, 0.01), Y: float64(i) / 100} // a log scale has no 0
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = c.col, vg.Points(2)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s: p50 %s, p99 %s", c.label, msText(res.P50ms), msText(res.P99ms)), line)
		curves++
	}
	if curves == 0 {
		return nil, errNoData
	}
	p.Legend.Left, p.Legend.Top = true, true
	return svgOf(p)
}

// msText writes milliseconds as the report does.
func msText(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// newGrid is the figures' grid.
func newGrid() plot.Plotter {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe0}
	g.Horizontal.Color = color.Gray{Y: 0xe0}
	return g
}
