package bench

import (
	"fmt"
	"io"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// seedFigure sets leasetop's acquire-and-release cycle and its renewal
// beside the seed's (the SQL the project started from), measured in the
// same run, interleaved: the median and the 99th percentile of each.
func seedFigure(rep *Report) (io.WriterTo, error) {
	pairs := []struct{ label, seed, ours string }{
		{"cycle", "seed-cycle", "cycle"},
		{"renewal", "seed-renew", "renew"},
	}
	var names []string
	var seedP50, seedP99, oursP50, oursP99 plotter.Values
	for _, pr := range pairs {
		s, okS := rep.result(pr.seed)
		o, okO := rep.result(pr.ours)
		if !okS || !okO {
			continue
		}
		names = append(names, pr.label+" p50", pr.label+" p99")
		seedP50, seedP99 = append(seedP50, s.P50ms), append(seedP99, s.P99ms)
		oursP50, oursP99 = append(oursP50, o.P50ms), append(oursP99, o.P99ms)
	}
	if len(names) == 0 {
		return nil, errNoData
	}
	seed, ours := interleave(seedP50, seedP99), interleave(oursP50, oursP99)
	p := newFigure("Against the seed's SQL, in the same run", "", "latency (ms)")
	w := vg.Points(22)
	bs, err := plotter.NewBarChart(seed, w)
	if err != nil {
		return nil, err
	}
	bs.Color, bs.LineStyle.Width, bs.Offset = colourBaseline, 0, -w/2
	bo, err := plotter.NewBarChart(ours, w)
	if err != nil {
		return nil, err
	}
	bo.Color, bo.LineStyle.Width, bo.Offset = colourLeasetop, 0, w/2
	p.Add(bs, bo)
	p.Legend.Add("the seed's SQL", bs)
	p.Legend.Add("leasetop", bo)
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.7, float64(len(names))-0.3
	p.Y.Min, p.Y.Max = 0, 1.3*max(maxOf(seed), maxOf(ours)) // room above the bars for the legend
	p.X.Label.Text = fmt.Sprintf("cycle = acquire + release; %d clients", rep.Settings.Clients)
	return svgOf(p)
}

// interleave is a[0], b[0], a[1], b[1], ...
func interleave(a, b plotter.Values) plotter.Values {
	out := make(plotter.Values, 0, len(a)+len(b))
	for i := range a {
		out = append(out, a[i], b[i])
	}
	return out
}

// maxOf is the largest of vs.
func maxOf(vs plotter.Values) float64 {
	m := 0.0
	for _, v := range vs {
		m = max(m, v)
	}
	return m
}
