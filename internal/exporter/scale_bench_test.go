package exporter

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// scaleExporter returns an exporter (never run) whose state holds n leases
// over 1000 accounts, as the bench's exporter workload writes them.
func scaleExporter(b *testing.B, n int, cfg Config) *Exporter {
	b.Helper()
	e := New(nil, cfg)
	now := time.Now()
	sync := data.Sync{Snapshot: data.Snapshot{Clock: data.NewClock(now, now, now)}}
	for i := range n {
		sync.Leases = append(sync.Leases, data.Lease{
			Key:   data.Key{Account: fmt.Sprintf("acct-%04d", i%1000), Session: fmt.Sprintf("s%07d", i)},
			RunID: uuid.New(), Holder: fmt.Sprintf("device-%d", i%500), Fence: int64(i),
			AcquiredAt: now, RenewedAt: now, ExpiresAt: now.Add(time.Duration(i%600) * time.Second),
		})
	}
	e.apply(monitor.Batch{Items: []monitor.Item{{Sync: &sync, At: now}}}, now)
	return e
}

// BenchmarkScaleScrape is one GET /metrics of an exporter of 100,000
// leases, through the handler (gathering, encoding, gzip).
func BenchmarkScaleScrape(b *testing.B) {
	for _, byAccount := range []bool{false, true} {
		b.Run(fmt.Sprintf("by-account=%v", byAccount), func(b *testing.B) {
			e := scaleExporter(b, 100_000, Config{ByAccount: byAccount})
			h := e.Handler(nil)
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/metrics", nil)
				req.Header.Set("Accept-Encoding", "gzip")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("GET /metrics = %d", w.Code)
				}
				_, _ = io.Copy(io.Discard, w.Body)
			}
		})
	}
}

// BenchmarkScaleScan is the gauges' pass over 100,000 leases alone.
func BenchmarkScaleScan(b *testing.B) {
	e := scaleExporter(b, 100_000, Config{})
	b.ReportAllocs()
	for b.Loop() {
		e.scan(time.Now())
	}
}
