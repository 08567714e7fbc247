package exporter

import (
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
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
		start := processCPU()
		now := time.Now()
		id := int64(1 << 40)
		for sec := range seconds {
			for batch := range batches {
				var items []monitor.Item
				for j := range perSecond / batches {
					id++
					key := data.Key{Account: "acct-writer", Session: fmt.Sprintf("w-%04d", (sec*perSecond+batch*perSecond/batches+j)/2%1000)}
					ev := data.Event{ID: id, Kind: data.KindAcquired, At: now, Key: key, RunID: uuid.New(), Fence: id,
						ExpiresAt: now.Add(time.Minute), Holder: "writer"}
					if j%2 == 1 {
						ev.Kind, ev.Fence = data.KindReleased, id-1
						ev.RunID = items[len(items)-1].Event.RunID
					}
					items = append(items, monitor.Item{Event: &ev, At: now})
				}
				e.apply(monitor.Batch{Items: items, Conn: data.ListenerState{Status: data.ListenerLive}}, now)
				if batch%(batches/4) == 0 {
					c0 := processCPU()
					req := httptest.NewRequest("GET", "/metrics", nil)
					req.Header.Set("Accept-Encoding", "gzip")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					_, _ = io.Copy(io.Discard, w.Body)
					scrapeCPU += processCPU() - c0
				}
			}
			now = now.Add(time.Second)
		}
		allCPU = processCPU() - start
		runtime.ReadMemStats(&gc1)
		b.ReportMetric(float64(scrapeCPU)/float64(time.Millisecond)/(seconds*4), "cpu-ms/scrape")
		b.ReportMetric(float64(allCPU)/float64(time.Millisecond)/seconds, "cpu-ms/s")
		b.ReportMetric(float64(gc1.NumGC-gc0.NumGC), "gcs")
		b.ReportMetric(float64(gc1.HeapAlloc)/(1<<20), "heap-MB")
		runtime.KeepAlive(e)
	}
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
