package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// loadSteps are the fleet sizes, below the monitor workload's n, at which
// it also measures the first picture and the memory: n/100 and n/10, those
// of 100 leases or more.
func loadSteps(n int) []int {
	var out []int
	for _, s := range []int{n / 100, n / 10} {
		if s >= 100 {
			out = append(out, s)
		}
	}
	return out
}

// monitorSteps grows the monitor workload's fleet to each of loadSteps(n)
// in turn and measures there what monitor-load measures at n: the time from
// the monitor's start to its first picture of every lease, and the heap it
// holds then (monitor-load-N rows; docs/BENCHMARKS.md plots them against
// the number of leases). It returns the rows and the leases written.
func (r *run) monitorSteps(ctx context.Context, store *data.Store, n int) ([]Result, int, error) {
	var out []Result
	written := 0
	for _, step := range loadSteps(n) {
		if err := r.bulkLeasesFrom(ctx, "monitor", written+1, step); err != nil {
			return nil, written, err
		}
		written = step
		res, err := measureLoad(ctx, store, fmt.Sprintf("monitor-load-%d", step), step)
		if err != nil {
			return nil, written, err
		}
		out = append(out, res)
	}
	return out, written, nil
}

// measureLoad starts a monitor on store's n leases, waits for its first
// picture of them all, and reports the time it took and the heap the
// monitor holds then (live after a collection, over what was live before
// it started); it stops the monitor.
func measureLoad(ctx context.Context, store *data.Store, name string, n int) (Result, error) {
	before := liveHeapMB()
	mon, err := startMonitor(ctx, store, monitor.FeedConfig{})
	if err != nil {
		return Result{}, err
	}
	defer mon.Stop()
	if err := mon.waitLoaded(ctx, 2*time.Minute); err != nil {
		return Result{}, err
	}
	h := &Histogram{}
	h.Record(mon.loadTime)
	res := newResult(name, fmt.Sprintf("monitor start -> first picture of all %d leases built (read, applied, rows sorted)", n), h, 0)
	res.HeapMB = max(liveHeapMB()-before, 0)
	res.Note = fmt.Sprintf("heap %.1f MB held", res.HeapMB)
	return res, nil
}

// liveHeapMB is the Go heap live after a collection, in MB.
func liveHeapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}
