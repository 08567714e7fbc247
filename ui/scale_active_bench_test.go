package ui

import (
	"bufio"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/monitor"
)

// BenchmarkScaleActive is the monitor of 1,000,000 leases through 30
// simulated seconds at 1000 transitions/s (a writer's sessions acquired and
// released in turn, in ten batches a second, a tick every 250 ms: a rebuild
// of the rows each second), as the program runs it after its first resync
// (monitor.FreeAfterResync). It reports the process's resident memory at
// the end and at its peak, the live heap after the last collection, the
// collections, and the CPU per simulated second. The clock is simulated: the
// figures count bytes and work, not the machine's speed. Run it alone (the
// memory is the process's), without GOGC or GOMEMLIMIT set:
//
//	go test ./ui -run '^$' -bench ScaleActive -benchtime 1x
func BenchmarkScaleActive(b *testing.B) {
	const n, seconds, perSecond, batches = 1_000_000, 30, 1000, 10
	for b.Loop() {
		leases := scaleLeaseSet(n)
		m, clock := scaleModel(leases, 200, 50)
		leases = nil
		monitor.FreeAfterResync(m.State().Len())
		var gc0 runtime.MemStats
		runtime.ReadMemStats(&gc0)
		b.ReportMetric(procStatusMB("VmRSS"), "start-rss-MB")
		c0 := monitortest.ProcessCPU()
		w := monitortest.NewWriter(1 << 40)
		for range seconds {
			for batch := range batches {
				apply(m, w.Batch(perSecond/batches, clock.t))
				if batch%(batches/4) == 0 {
					clock.Advance(250 * time.Millisecond)
					m.Update(tickMsg(clock.t))
					_ = m.View()
				}
			}
		}
		b.ReportMetric(float64(monitortest.ProcessCPU()-c0)/float64(time.Millisecond)/seconds, "cpu-ms/s")
		var gc1 runtime.MemStats
		runtime.ReadMemStats(&gc1)
		b.ReportMetric(float64(gc1.HeapInuse)/(1<<20), "heap-inuse-MB")
		b.ReportMetric(float64(gc1.HeapSys-gc1.HeapReleased)/(1<<20), "heap-kept-MB")
		b.ReportMetric(float64(gc1.NextGC)/(1<<20), "next-gc-MB")
		b.ReportMetric(procStatusMB("VmRSS"), "rss-MB")
		b.ReportMetric(procStatusMB("VmHWM"), "peak-rss-MB")
		b.ReportMetric(liveHeapMB(), "live-heap-MB")
		b.ReportMetric(float64(gc1.NumGC-gc0.NumGC), "gcs")
		b.ReportMetric(float64(m.State().Len()), "leases")
		if testing.Verbose() {
			runtime.GC()
			ms := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
				{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
				{Name: "/gc/gomemlimit:bytes"}, {Name: "/gc/heap/goal:bytes"}}
			metrics.Read(ms)
			for _, x := range ms {
				b.Logf("%s %.1f MiB", x.Name, float64(x.Value.Uint64())/(1<<20))
			}
		}
		runtime.KeepAlive(m)
	}
}

// procStatusMB reads a memory figure (VmRSS, VmHWM) of this process, in MB.
func procStatusMB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// liveHeapMB is the heap the last collection found live.
func liveHeapMB() float64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()) / (1 << 20)
}
