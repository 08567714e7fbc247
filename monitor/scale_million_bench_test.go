package monitor_test

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// BenchmarkScaleMillion is the monitor's first picture of 1,000,000 leases
// in its parts, each as CPU time of this process (on a loaded machine the
// wall time mostly measures the others): the read (ReadSync), the apply
// and the first sorted rows, and the heap the State and its rows keep,
// with what the read allocates and the process's peak resident
// memory. It writes the leases straight into the table, triggers off.
// Run it with
//
//	go test ./monitor -run '^$' -bench 'ScaleMillion$' -benchtime 1x
func BenchmarkScaleMillion(b *testing.B) {
	const n = 1_000_000
	store := seedMillion(b)
	ctx := context.Background()
	var readCPU, applyCPU, rowsCPU time.Duration
	var heap, readAlloc float64
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0 := cpuNow()
		sync, err := store.ReadSync(ctx, data.SyncQuery{After: -1, Tail: 500})
		if err != nil {
			b.Fatalf("ReadSync: %v", err)
		}
		c1 := cpuNow()
		runtime.ReadMemStats(&m1)
		readAlloc += float64(m1.TotalAlloc-m0.TotalAlloc) / (1 << 20)
		st := monitor.NewState(monitor.Config{})
		st.ApplySync(sync, time.Now())
		c2 := cpuNow()
		rows := st.Rows(nil, monitor.RowQuery{})
		_ = st.CountIndex()
		c3 := cpuNow()
		if len(rows) != n {
			b.Fatalf("%d rows, want %d", len(rows), n)
		}
		sync = data.Sync{}
		readCPU, applyCPU, rowsCPU = readCPU+c1-c0, applyCPU+c2-c1, rowsCPU+c3-c2
		heap = heapMB()
		runtime.KeepAlive(st)
		runtime.KeepAlive(rows)
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(per(readCPU), "read-cpu-ms")
	b.ReportMetric(per(applyCPU), "apply-cpu-ms")
	b.ReportMetric(per(rowsCPU), "rows-cpu-ms")
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(readAlloc/float64(b.N), "read-alloc-MB")
	b.ReportMetric(peakRSSMB(), "peak-rss-MB")
}

// peakRSSMB is this process's peak resident memory.
func peakRSSMB() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // kilobytes on Linux
}

// seedMillion writes 1,000,000 leases straight into a fresh database,
// triggers off, and returns a store on it.
func seedMillion(b *testing.B) *data.Store {
	db := pgtest.New(b)
	conn := db.Conn(b)
	for _, q := range []string{`SET session_replication_role = replica`,
		`INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		 SELECT 'acct-' || lpad((g % 1000)::text, 4, '0'), 'sess-' || lpad(g::text, 7, '0'), gen_random_uuid(),
		        'device-' || (g % 500), g, now() - interval '1 hour', now() - interval '10 minutes', now() + interval '1 hour'
		   FROM generate_series(1, 1000000) g`, `RESET session_replication_role`, `ANALYZE lease.session_lease`} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	return db.Store(b)
}

// BenchmarkScaleMillionFeed is the monitor's first picture of 1,000,000
// leases the way the terminal gets it: a Feed's first resync, which reads
// the leases straight into columns, applied to a new State, and the first
// sorted rows; as CPU time of this process from the feed's start, with the
// process's peak resident memory (run it alone: the peak is the process's).
//
//	go test ./monitor -run '^$' -bench ScaleMillionFeed -benchtime 1x
func BenchmarkScaleMillionFeed(b *testing.B) {
	const n = 1_000_000
	store := seedMillion(b)
	var firstCPU time.Duration
	for b.Loop() {
		c0 := cpuNow()
		feed := monitor.NewFeed(store, monitor.FeedConfig{})
		stop := feed.Start(context.Background())
		st := monitor.NewState(monitor.Config{})
		for !st.Synced() {
			batch, ok := feed.Next()
			if !ok {
				b.Fatal("the feed stopped before its first resync")
			}
			st.Apply(batch, time.Now())
		}
		rows := st.Rows(nil, monitor.RowQuery{})
		firstCPU += cpuNow() - c0
		stop()
		if len(rows) != n {
			b.Fatalf("%d rows, want %d", len(rows), n)
		}
	}
	b.ReportMetric(float64(firstCPU)/float64(time.Millisecond)/float64(b.N), "first-picture-cpu-ms")
	b.ReportMetric(peakRSSMB(), "peak-rss-MB")
}

// cpuNow is this process's user and system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
