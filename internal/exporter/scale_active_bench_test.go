package exporter

import (
	"io"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/monitor"
)

// BenchmarkScaleActiveScrape is the exporter of 1,000,000 leases through 20
// simulated seconds at 1000 transitions/s (ten batches a second) and a
// scrape every 250 ms, after its first resync (monitor.FreeAfterResync), as
// the program runs it: the CPU of this process per scrape and per second,
// and the collections. The clock is simulated: it counts work, not the
// machine's speed. Compare the collector's settings with the environment:
//
//	go test ./internal/exporter -run '^$' -bench ScaleActiveScrape -benchtime 1x
//	GOGC=50 go test ./internal/exporter -run '^$' -bench ScaleActiveScrape -benchtime 1x
func BenchmarkScaleActiveScrape(b *testing.B) {
	const n, seconds, perSecond, batches = 1_000_000, 20, 1000, 10
	for b.Loop() {
		e := scaleExporter(b, n, Config{})
		monitor.FreeAfterResync(e.leases())
		h := e.Handler(nil)
		var gc0, gc1 runtime.MemStats
		runtime.ReadMemStats(&gc0)
		var scrapeCPU, allCPU time.Duration
		start := monitortest.ProcessCPU()
		now := time.Now()
		w := monitortest.NewWriter(1 << 40)
		for range seconds {
			for batch := range batches {
				e.apply(w.Batch(perSecond/batches, now), now)
				if batch%(batches/4) == 0 {
					c0 := monitortest.ProcessCPU()
					req := httptest.NewRequest("GET", "/metrics", nil)
					req.Header.Set("Accept-Encoding", "gzip")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					_, _ = io.Copy(io.Discard, rec.Body)
					scrapeCPU += monitortest.ProcessCPU() - c0
				}
			}
			now = now.Add(time.Second)
		}
		allCPU = monitortest.ProcessCPU() - start
		runtime.ReadMemStats(&gc1)
		b.ReportMetric(float64(scrapeCPU)/float64(time.Millisecond)/(seconds*4), "cpu-ms/scrape")
		b.ReportMetric(float64(allCPU)/float64(time.Millisecond)/seconds, "cpu-ms/s")
		b.ReportMetric(float64(gc1.NumGC-gc0.NumGC), "gcs")
		b.ReportMetric(float64(gc1.HeapAlloc)/(1<<20), "heap-MB")
		runtime.KeepAlive(e)
	}
}
