package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/exporter"
)

// The exporter at scale, beside the monitor: the same Config.MonitorLeases
// live leases as the monitor workload (written here when it did not run
// first), then `leasetop exporter` (internal/exporter serving /metrics over
// loopback HTTP, as the command does) runs in this process, scraped every
// exporterScrapeEvery:
//
//   - exporter-load: start -> the first sync applied (/readyz would say
//     ready);
//   - exporter-idle: a window in which nothing changes: CPU of this process
//     over wall time, resident memory;
//   - exporter-active: the same with a writer doing 1000 transitions/s (its
//     client-side CPU is in this process too, as in monitor-active);
//   - exporter-scrape: every GET /metrics of both windows, from the request
//     to the last byte of the answer.
//
// Run it alone (--only exporter) for a clean resident-memory figure, or with
// the monitor (--only monitor,exporter) for the two side by side.
func exporterScale(ctx context.Context, r *run, w workload) ([]Result, error) {
	n := r.cfg.MonitorLeases
	if err := r.scaleLeases(ctx, n); err != nil {
		return nil, err
	}
	store, err := r.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	debug.FreeOSMemory()
	rssBefore := residentMB("VmRSS")

	es, err := startExporterServer(ctx, store, exporter.Config{})
	if err != nil {
		return nil, err
	}
	defer es.stop()
	loadTime, err := es.waitReady(ctx, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	load := &Histogram{}
	load.Record(loadTime)
	loadRes := newResult("exporter-load", fmt.Sprintf("exporter start -> first sync of all %d leases applied (ready)", n), load, 0)
	loadRes.RSSMB = residentMB("VmRSS")
	loadRes.Note = fmt.Sprintf("rss %.0f MB after load (%.0f MB before the exporter started)", loadRes.RSSMB, rssBefore)

	r.progress("exporter: idle window")
	idle, idleScrapes := r.exporterWindow(ctx, es, nil)
	idle.Name = "exporter-idle"
	idle.Description = fmt.Sprintf("%d leases, nothing changes, a scrape every %v: CPU of the exporter's process, resident memory", n, exporterScrapeEvery)

	r.progress("exporter: active window, 1000 transitions/s")
	var sent atomic.Int64
	active, activeScrapes := r.exporterWindow(ctx, es, func(ctx context.Context, phase *atomic.Int32) error {
		wr, err := r.openWriters(ctx, "exporter-writer", 1000)
		if err != nil {
			return err
		}
		defer wr.Close()
		return wr.run(ctx, phase, &sent, nil)
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if active.Error == "" && active.CPUPct > 0 {
		active.Note += fmt.Sprintf("; %.0f transitions/s achieved", float64(sent.Load())/(r.cfg.Warmup+r.cfg.Duration).Seconds())
	}
	active.Name = "exporter-active"
	active.Description = fmt.Sprintf("%d leases and %d transitions/s: the same (the writer's client CPU is in this process too)", n, 1000)
	idleScrapes.Merge(activeScrapes)
	scrape := newResult("exporter-scrape", fmt.Sprintf("GET /metrics at %d leases, idle and at 1000 transitions/s: request -> last byte", n), idleScrapes, 0)
	scrape.Note = fmt.Sprintf("%.1f kB per scrape (gzip); peak rss %.0f MB", float64(es.lastSize.Load())/1024, residentMB("VmHWM"))
	return []Result{loadRes, idle, active, scrape}, nil
}

// exporterScrapeEvery is how often the bench scrapes the exporter: more
// often than any Prometheus would, so the CPU figures are an upper bound and
// each window holds enough scrapes for a p99.
const exporterScrapeEvery = 250 * time.Millisecond

// scaleLeases makes sure the n leases of the monitor workload are held:
// written by it earlier in this run, else written now.
func (r *run) scaleLeases(ctx context.Context, n int) error {
	var have int
	err := r.admin.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease
		WHERE starts_with(account_id, $1) AND expires_at > clock_timestamp()`, r.account("monitor")+"-a").Scan(&have)
	switch {
	case err != nil:
		return fmt.Errorf("count the monitor workload's leases: %w", err)
	case have == n:
		return nil
	case have == 0:
		r.progress(fmt.Sprintf("exporter: writing %d leases in bulk", n))
		return r.bulkLeases(ctx, "monitor", n)
	default:
		return fmt.Errorf("the monitor workload left %d of its %d leases held", have, n)
	}
}

// exporterWindow measures CPU and memory over one Duration window while the
// exporter is scraped and load (if any) runs, after a warm-up; it returns
// the Result and the scrapes timed in the window.
func (r *run) exporterWindow(ctx context.Context, es *exporterServer, load func(context.Context, *atomic.Int32) error) (Result, *Histogram) {
	var phase atomic.Int32
	var wg sync.WaitGroup
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if load != nil {
		wg.Go(func() {
			if err := load(lctx, &phase); err != nil && lctx.Err() == nil {
				cancel(err)
			}
		})
	}
	scrapes := &Histogram{} // written by the scraper, read after wg.Wait
	wg.Go(func() {
		if err := es.scrapeUntilDone(lctx, &phase, scrapes); err != nil && lctx.Err() == nil {
			cancel(err)
		}
	})
	var cpu0 time.Duration
	var wall0 time.Time
	window := r.measureWindow(lctx, &phase, func(from, _ time.Time) {
		if !from.IsZero() {
			cpu0, wall0 = cpuTime(), from
		}
	})
	cpu := cpuTime() - cpu0
	wg.Wait()
	res := Result{Ops: scrapes.Count()}
	if err := context.Cause(lctx); err != nil && ctx.Err() == nil {
		res.Error = clean(err.Error())
		return res, scrapes
	}
	if window > 0 && !wall0.IsZero() {
		res.CPUPct = 100 * cpu.Seconds() / window.Seconds()
		res.OpsPerSec = float64(scrapes.Count()) / window.Seconds()
	}
	res.RSSMB = residentMB("VmRSS")
	res.P50ms, res.P99ms, res.MaxMs = ms(scrapes.Quantile(0.5)), ms(scrapes.Quantile(0.99)), ms(scrapes.Max())
	res.Note = fmt.Sprintf("cpu %.1f%% of one core, rss %.0f MB; %d scrapes, p99 %.1f ms", res.CPUPct, res.RSSMB, scrapes.Count(), res.P99ms)
	return res, scrapes
}

// exporterServer is an Exporter serving its endpoints on loopback, as
// `leasetop exporter` does.
type exporterServer struct {
	exp      *exporter.Exporter
	srv      *http.Server
	url      string
	started  time.Time
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	client   http.Client
	lastSize atomic.Int64 // bytes of the last scrape, as sent
}

func startExporterServer(ctx context.Context, store *data.Store, cfg exporter.Config) (*exporterServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the exporter: %w", err)
	}
	ectx, cancel := context.WithCancel(ctx)
	es := &exporterServer{
		exp:     exporter.New(store, cfg),
		url:     "http://" + ln.Addr().String() + "/metrics",
		started: time.Now(),
		cancel:  cancel,
		client:  http.Client{Timeout: 30 * time.Second},
	}
	es.srv = &http.Server{Handler: es.exp.Handler(nil), ReadHeaderTimeout: 10 * time.Second}
	es.wg.Go(func() { _ = es.srv.Serve(ln) })
	es.wg.Go(func() { _ = es.exp.Run(ectx) })
	return es, nil
}

// waitReady waits for the first sync and returns the time since the start.
func (es *exporterServer) waitReady(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for !es.exp.Ready() {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("exporter not ready within %v", timeout)
		}
		if !sleepCtx(ctx, 2*time.Millisecond) {
			return 0, ctx.Err()
		}
	}
	return time.Since(es.started), nil
}

// scrapeUntilDone scrapes every exporterScrapeEvery until the phase is done,
// recording the scrapes made in the measured window.
func (es *exporterServer) scrapeUntilDone(ctx context.Context, phase *atomic.Int32, h *Histogram) error {
	tick := time.NewTicker(exporterScrapeEvery)
	defer tick.Stop()
	for phase.Load() != phaseDone {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		recording := phase.Load() == phaseMeasure
		d, err := es.scrape(ctx)
		if err != nil {
			return err
		}
		if recording {
			h.Record(d)
		}
	}
	return nil
}

// promAccept is what Prometheus 2.x asks a target for.
const promAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// scrape GETs /metrics as Prometheus does (gzip, its Accept header) and
// returns the time to the last byte.
func (es *exporterServer) scrape(ctx context.Context) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, es.url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", promAccept)
	req.Header.Set("Accept-Encoding", "gzip") // set by hand: the answer stays compressed, as Prometheus receives it
	t0 := time.Now()
	resp, err := es.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape the exporter: %w", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("scrape the exporter: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape the exporter: %s", resp.Status)
	}
	es.lastSize.Store(n)
	return d, nil
}

// stop ends the exporter and its server and waits for both.
func (es *exporterServer) stop() {
	es.cancel()
	_ = es.srv.Close()
	es.wg.Wait()
}
