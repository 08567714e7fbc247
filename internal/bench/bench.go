package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	leasesql "github.com/leasetop/leasetop/sql"
)

// Report is a run's outcome: where it ran, each workload's numbers and the
// ratios between them.
type Report struct {
	Machine  Machine      `json:"machine"`
	Settings ReportConfig `json:"settings"`
	Results  []Result     `json:"results"`
	Ratios   []Ratio      `json:"ratios"`
}

// ReportConfig is the part of Config that shaped the numbers.
type ReportConfig struct {
	Clients   int     `json:"clients"`
	Keys      int     `json:"keys"`
	DurationS float64 `json:"duration_s"`
	WarmupS   float64 `json:"warmup_s"`
	// MonitorLeases is --monitor-leases: the leases the monitor workload's
	// monitor-load row measured.
	MonitorLeases int `json:"monitor_leases,omitempty"`
}

// Failed reports whether any workload failed.
func (r *Report) Failed() bool {
	for _, res := range r.Results {
		if res.Error != "" {
			return true
		}
	}
	return false
}

// Run runs the selected workloads against cfg.DSN, whose lease schema must be
// at this leasetop's version, and removes everything it created. A workload
// that fails is reported in its Result and the others still run; Run returns
// an error only when it cannot run at all, is cancelled, or cannot clean up.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	selected, err := selectWorkloads(cfg.Only)
	if err != nil {
		return nil, err
	}
	r, err := newRun(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer r.admin.Close(context.WithoutCancel(ctx))
	if have, err := data.SchemaVersion(ctx, r.admin); err != nil {
		return nil, err
	} else if have != leasesql.Version {
		return nil, &data.SchemaError{Have: have, Want: leasesql.Version}
	}
	rep := &Report{Settings: ReportConfig{
		Clients: cfg.Clients, Keys: cfg.Keys, DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(),
		MonitorLeases: cfg.MonitorLeases,
	}}
	if rep.Machine, err = describeMachine(ctx, r.admin, cfg); err != nil {
		return nil, fmt.Errorf("describe the server: %w", data.Translate(err))
	}
	err = r.createScratch(ctx)
	if err == nil {
		err = r.runAll(ctx, selected, rep)
	}
	if cerr := r.cleanup(ctx); cerr != nil {
		err = errors.Join(err, cerr)
	}
	rep.Machine.LoadEnd = loadAverage()
	rep.Ratios = ratios(rep.Results, cfg.MonitorLeases)
	return rep, err
}

// runAll runs the workloads in order, the selected members of a set
// together; it stops early only when ctx ends.
func (r *run) runAll(ctx context.Context, selected []workload, rep *Report) error {
	for i := 0; i < len(selected); i++ {
		w := selected[i]
		if w.loop == nil {
			r.progress(w.name)
			res, err := w.run(ctx, r, w)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				res = []Result{{Name: w.name, Error: clean(err.Error())}}
			}
			rep.Results = append(rep.Results, res...)
			continue
		}
		set := []*member{w.member(r)}
		names := []string{w.name}
		for ; w.set != "" && i+1 < len(selected) && selected[i+1].set == w.set; i++ {
			set = append(set, selected[i+1].member(r))
			names = append(names, selected[i+1].name)
		}
		r.progress(strings.Join(names, ", "))
		r.runSet(ctx, set)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, m := range set {
			if m.err != nil {
				rep.Results = append(rep.Results, Result{Name: m.w.name, Error: clean(m.err.Error())})
				continue
			}
			rep.Results = append(rep.Results, m.results...)
		}
	}
	return nil
}

func (r *run) progress(what string) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(what)
	}
}

// Estimate returns roughly how long Run takes with cfg: each workload's
// warm-up and window, plus set-up.
func Estimate(cfg Config) time.Duration {
	cfg = cfg.withDefaults()
	ws, err := selectWorkloads(cfg.Only)
	if err != nil {
		return 0
	}
	total := time.Duration(0)
	for _, w := range ws {
		total += cfg.Warmup + cfg.Duration + 200*time.Millisecond
		if w.name == "monitor" || w.name == "exporter" || w.name == "timeline" { // writing the leases (~5000/s here), a second window, the load
			total += time.Duration(cfg.MonitorLeases)*time.Second/5000 + cfg.Warmup + cfg.Duration + 5*time.Second
		}
	}
	return total
}
