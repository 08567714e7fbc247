package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/ui"
)

// The monitor at scale: Config.MonitorLeases live leases (100,000 by
// default) written in bulk (bulkLeases), then the monitor (the program
// ui.Run runs, built by ui.NewProgram, but drawing a 200x50 screen into
// io.Discard) runs in this process:
//
//   - monitor-load: program start -> the first picture of every lease built
//     (read, applied, rows sorted);
//   - monitor-idle: a window in which nothing changes: CPU of this process
//     (getrusage) over wall time, resident memory (VmRSS);
//   - monitor-active: the same with a writer doing 1000 transitions/s (its
//     client-side CPU is in this process too, so this CPU is an upper bound);
//   - monitor-frame: the time of every View the program rendered in both
//     windows.
//
// On the way to n it measures the first picture at n/100 and n/10 leases
// too (monitorSteps: monitor-load-N). Run it alone (--only monitor) for a
// clean resident-memory figure.
func monitorScale(ctx context.Context, r *run, w workload) ([]Result, error) {
	n := r.cfg.MonitorLeases
	store, err := r.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if r.cfg.Progress != nil {
		r.cfg.Progress(fmt.Sprintf("monitor: writing %d leases in bulk, the first picture measured on the way at %v", n, loadSteps(n)))
	}
	steps, written, err := r.monitorSteps(ctx, store, n)
	if err != nil {
		return nil, err
	}
	if err := r.bulkLeasesFrom(ctx, "monitor", written+1, n); err != nil {
		return nil, err
	}
	debug.FreeOSMemory()
	rssBefore := residentMB("VmRSS")
	heapBefore := liveHeapMB()

	mon, err := startMonitor(ctx, store, monitor.FeedConfig{}) // the default ReadTimeout: a resync that keeps receiving is not cut off
	if err != nil {
		return nil, err
	}
	defer mon.Stop()
	if err := mon.waitLoaded(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	load := &Histogram{}
	load.Record(mon.loadTime)
	loadRes := newResult("monitor-load", fmt.Sprintf("monitor start -> first picture of all %d leases built (read, applied, rows sorted)", n), load, 0)
	loadRes.RSSMB = residentMB("VmRSS")
	loadRes.HeapMB = max(liveHeapMB()-heapBefore, 0)
	loadRes.Note = fmt.Sprintf("rss %.0f MB after load (%.0f MB before the monitor started), heap %.1f MB held", loadRes.RSSMB, rssBefore, loadRes.HeapMB)

	if r.cfg.Progress != nil {
		r.cfg.Progress("monitor: idle window")
	}
	mon.frames.swap()
	idle, idleFrames := r.usageWindow(ctx, mon, nil)
	idle.Name, idle.Description = "monitor-idle", fmt.Sprintf("%d leases, nothing changes: CPU of the monitor's process, resident memory", n)

	r.progress("monitor: sort and filter keys")
	sorts, filters, err := monitorAnswers(ctx, mon)
	if err != nil {
		return nil, err
	}
	sortRes := newResult("monitor-sort", fmt.Sprintf("s (the next sort order) -> the frame that shows it, %d leases, each of the four orders", n), sorts, 0)
	filterRes := newResult("monitor-filter", fmt.Sprintf("one key of a filter typed or erased -> the frame that shows it, %d leases", n), filters, 0)

	if r.cfg.Progress != nil {
		r.cfg.Progress("monitor: active window, 1000 transitions/s")
	}
	mon.frames.swap()
	var sent atomic.Int64
	active, activeFrames := r.usageWindow(ctx, mon, func(ctx context.Context, phase *atomic.Int32) error {
		wr, err := r.openWriters(ctx, "monitor-writer", 1000)
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
	active.Name = "monitor-active"
	active.Description = fmt.Sprintf("%d leases and %d transitions/s: the same (the writer's client CPU is in this process too)", n, 1000)
	if mon.err() != nil {
		return nil, mon.err()
	}
	idleFrames.Merge(activeFrames)
	frame := newResult("monitor-frame", "time to render one 200x50 frame of the monitor (View), idle and active windows", idleFrames, 0)
	frame.Note = fmt.Sprintf("peak rss %.0f MB", residentMB("VmHWM"))
	return append(steps, loadRes, idle, sortRes, filterRes, active, frame), nil
}

// preloadLeases acquires n leases through lease.acquire (1000 accounts of the
// workload tagged tag), in transactions of 5000, for a workload that
// measures a database holding them.
func (r *run) preloadLeases(ctx context.Context, tag string, n int) error {
	return r.preloadLeasesFrom(ctx, tag, 1, n)
}

// preloadLeasesFrom is preloadLeases of the leases from to n only.
func (r *run) preloadLeasesFrom(ctx context.Context, tag string, from, n int) error {
	const chunk = 5000
	m, start := r.meter(), time.Now()
	m.Start(tag+": acquiring leases", int64(n), "leases")
	resume(m, from-1)
	defer m.Done("")
	for lo := from; lo <= n; lo += chunk {
		hi := min(lo+chunk-1, n)
		var got int
		err := r.admin.QueryRow(ctx, `
			SELECT count(*) FROM generate_series($2::int, $3::int) g,
			       LATERAL lease.acquire($1 || '-a' || lpad((g % 1000)::text, 4, '0'), 's' || lpad(g::text, 7, '0'),
			                             gen_random_uuid(), $4::interval, 'device-' || (g % 500)) a`,
			r.account(tag), lo, hi, holdTTL).Scan(&got)
		if err != nil {
			return fmt.Errorf("write %d leases: %w", n, err)
		}
		if got != hi-lo+1 {
			return fmt.Errorf("write leases %d-%d: %d granted, want %d", lo, hi, got, hi-lo+1)
		}
		m.Set(int64(hi))
	}
	m.Done(loaded(tag, "acquired", from, n, "leases", time.Since(start)))
	return nil
}

// usageWindow measures CPU and memory over one Duration window while load
// (if any) runs, after a warm-up; it returns the Result and the frames
// rendered in the window.
func (r *run) usageWindow(ctx context.Context, mon *monitorProgram, load func(context.Context, *atomic.Int32) error) (Result, *Histogram) {
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
	var cpu0 time.Duration
	var wall0 time.Time
	window := r.measureWindow(lctx, &phase, func(from, _ time.Time) {
		if !from.IsZero() {
			mon.frames.swap()
			cpu0, wall0 = cpuTime(), from
		}
	})
	cpu := cpuTime() - cpu0
	frames := mon.frames.swap()
	wg.Wait()
	res := Result{Ops: frames.Count()}
	if err := context.Cause(lctx); err != nil && ctx.Err() == nil {
		res.Error = clean(err.Error())
		return res, frames
	}
	if window > 0 && !wall0.IsZero() {
		res.CPUPct = 100 * cpu.Seconds() / window.Seconds()
		res.OpsPerSec = float64(frames.Count()) / window.Seconds()
	}
	res.RSSMB = residentMB("VmRSS")
	res.P50ms, res.P99ms, res.MaxMs = ms(frames.Quantile(0.5)), ms(frames.Quantile(0.99)), ms(frames.Max())
	res.Note = fmt.Sprintf("cpu %.1f%% of one core, rss %.0f MB; %d frames", res.CPUPct, res.RSSMB, frames.Count())
	return res, frames
}

// monitorProgram is the monitor's program exactly as ui.Run runs it
// (ui.NewProgram), drawing into io.Discard, with its frames timed.
type monitorProgram struct {
	cancel context.CancelFunc
	done   chan error // the program's outcome, put back by whoever takes it

	started  time.Time
	loaded   chan struct{}
	loadTime time.Duration // set before loaded is closed
	frames   *frameLog
	input    io.Writer // the program's keyboard
	answers  *answerLog
}

func startMonitor(ctx context.Context, store *data.Store, feed monitor.FeedConfig) (*monitorProgram, error) {
	mp, _, err := runMonitor(ctx, store, feed, func(t *timedModel) tea.Model { return t })
	return mp, err
}

// err returns the program's error once it has stopped, nil while it runs.
func (mp *monitorProgram) err() error {
	select {
	case err := <-mp.done:
		mp.done <- err
		return err
	default:
		return nil
	}
}

// waitLoaded waits for the first picture.
func (mp *monitorProgram) waitLoaded(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-mp.loaded:
		return nil
	case err := <-mp.done:
		mp.done <- err
		return fmt.Errorf("monitor stopped before its first picture: %v", err)
	case <-t.C:
		return fmt.Errorf("monitor did not build its first picture within %v", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop ends the program (which stops its feed) and waits for it.
func (mp *monitorProgram) Stop() {
	mp.cancel()
	err := <-mp.done
	mp.done <- err
}

// frameLog collects frame times from the program's goroutine; swap hands
// the collected ones to the bench and starts afresh.
type frameLog struct {
	mu sync.Mutex
	h  *Histogram
}

func (f *frameLog) record(d time.Duration) {
	f.mu.Lock()
	f.h.Record(d)
	f.mu.Unlock()
}

func (f *frameLog) swap() *Histogram {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.h
	f.h = &Histogram{}
	return old
}

// timedModel times every View of the monitor's model, and calls onLoad
// after the Update that applied the first resync: the first picture of every
// lease is built (read, applied, rows sorted).
type timedModel struct {
	m       *ui.Model
	frames  *frameLog
	answers *answerLog
	onLoad  func()               // nil once called
	loaded  func(*ui.Model) bool // when the first picture is built; nil: the first resync applied
}

func (t *timedModel) Init() tea.Cmd { return t.m.Init() }

func (t *timedModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := t.m.Update(msg)
	t.answers.update(msg)
	if t.onLoad != nil && (t.loaded == nil && t.m.State().Synced() || t.loaded != nil && t.loaded(t.m)) {
		t.onLoad()
		t.onLoad = nil
	}
	return t, cmd
}

func (t *timedModel) View() tea.View {
	t0 := time.Now()
	v := t.m.View()
	t.frames.record(time.Since(t0))
	t.answers.viewed()
	return v
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// residentMB reads a memory figure (VmRSS, VmHWM) of this process, in MB.
func residentMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}
