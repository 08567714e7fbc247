package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/ui"
)

// The cost of many databases in one monitor: the
// bench's database and monitorContextCount-1 databases it creates on the
// same server (dropped at the end), each holding Config.MonitorLeases live
// leases written in bulk, watched by one monitor of as many contexts (the
// program ui.Run runs for leasetop watch --context, drawing a 200x50 screen
// into io.Discard):
//
//   - monitor-contexts-load: program start -> the first picture with every
//     context's leases in the one table;
//   - monitor-contexts-sort, -filter: a sort key and a filter key -> the
//     frame that shows it;
//   - monitor-contexts-active: CPU and resident memory with writers making
//     1000 transitions/s in all, spread over the databases.
//
// The figures: five contexts of 200,000 leases
// (--monitor-leases 200000): first picture ≤ 3 s, RSS ≤ 300 MB at 1000
// transitions/s, keys p99 ≤ 100 ms.
const monitorContextCount = 5

// monitorContextsScale is the monitor-contexts workload.
func monitorContextsScale(ctx context.Context, r *run, w workload) ([]Result, error) {
	n := r.cfg.MonitorLeases
	runs := []*run{r}
	defer func() {
		for _, o := range runs[1:] {
			o.dropDatabase()
		}
	}()
	for i := 2; i <= monitorContextCount; i++ {
		o, err := r.otherDatabase(ctx, fmt.Sprintf("%s_%d", r.schema, i))
		if err != nil {
			return nil, err
		}
		runs = append(runs, o)
	}
	contexts := make([]ui.Context, len(runs))
	for i, o := range runs {
		r.progress(fmt.Sprintf("%s: context %d of %d", w.name, i+1, len(runs)))
		if err := o.bulkLeases(ctx, w.name, n); err != nil {
			return nil, err
		}
		dsn := o.cfg.DSN
		contexts[i] = ui.Context{Context: monitor.Context{Name: fmt.Sprintf("db%d", i+1), Open: func(ctx context.Context) (*data.Store, error) {
			return data.Open(ctx, dsn)
		}}}
	}
	total := n * len(runs)
	mon, _, err := runMonitorOf(ctx, ui.Options{Config: ui.Config{ReadOnly: true, Contexts: contexts}},
		func(m *ui.Model) bool { return m.State().Len() >= total })
	if err != nil {
		return nil, err
	}
	defer mon.Stop()
	if err := mon.waitLoaded(ctx, 5*time.Minute); err != nil {
		return nil, err
	}
	load := &Histogram{}
	load.Record(mon.loadTime)
	loadRes := newResult(w.name+"-load", fmt.Sprintf("monitor start -> first picture of %d contexts x %d leases in one table", len(runs), n), load, 0)
	loadRes.RSSMB = residentMB("VmRSS")
	loadRes.Note = fmt.Sprintf("rss %.0f MB after load", loadRes.RSSMB)

	r.progress(w.name + ": sort and filter keys")
	sorts, filters, err := monitorAnswers(ctx, mon)
	if err != nil {
		return nil, err
	}
	sortRes := newResult(w.name+"-sort", fmt.Sprintf("s -> the frame that shows it, %d leases in %d contexts", total, len(runs)), sorts, 0)
	filterRes := newResult(w.name+"-filter", fmt.Sprintf("one key of a filter -> the frame that shows it, %d leases in %d contexts", total, len(runs)), filters, 0)

	r.progress(w.name + ": active window, 1000 transitions/s over the databases")
	mon.frames.swap()
	var sent atomic.Int64
	active, _ := r.usageWindow(ctx, mon, func(ctx context.Context, phase *atomic.Int32) error {
		return writeAcross(ctx, runs, w.name, 1000, phase, &sent)
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	active.Name = w.name + "-active"
	active.Description = fmt.Sprintf("%d contexts x %d leases, 1000 transitions/s in all: CPU (the writers' client CPU included), resident memory", len(runs), n)
	if active.Error == "" {
		active.Note += fmt.Sprintf("; %.0f transitions/s achieved", float64(sent.Load())/(r.cfg.Warmup+r.cfg.Duration).Seconds())
	}
	if err := mon.err(); err != nil {
		return nil, err
	}
	return []Result{loadRes, sortRes, filterRes, active}, nil
}

// writeAcross runs rate transitions a second spread evenly over runs'
// databases until the phase is done.
func writeAcross(ctx context.Context, runs []*run, tag string, rate int, phase *atomic.Int32, sent *atomic.Int64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, o := range runs {
		wr, err := o.openWriters(ctx, tag+"-writer", rate/len(runs))
		if err != nil {
			return err
		}
		defer wr.Close()
		wg.Go(func() { errs[i] = wr.run(ctx, phase, sent, nil) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// otherDatabase creates and migrates a database named name on r's server
// and returns a run on it that shares r's names (its leases are the same
// workload's).
func (r *run) otherDatabase(ctx context.Context, name string) (*run, error) {
	dsn, err := pgserver.CreateMigrated(ctx, r.cfg.DSN, name)
	if err != nil {
		return nil, fmt.Errorf("another database for the contexts: %w (it takes CREATEDB on the server)", err)
	}
	o := &run{cfg: r.cfg, id: r.id, prefix: r.prefix, schema: r.schema, channel: r.channel, dropName: name, parent: r}
	o.cfg.DSN = dsn
	if o.connCfg, err = data.ParseConnConfig(dsn); err == nil {
		o.connCfg.RuntimeParams["application_name"] = "leasetop bench"
		o.admin, err = o.connect(ctx)
	}
	if err != nil {
		o.dropDatabase()
		return nil, err
	}
	return o, nil
}

// dropDatabase drops the database otherDatabase made, from its parent's
// connection.
func (o *run) dropDatabase() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.admin != nil {
		_ = o.admin.Close(ctx)
	}
	_, _ = o.parent.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{o.dropName}.Sanitize()+" WITH (FORCE)")
}
