package data_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// BenchmarkFailoverCheck measures what keeping fences and event ids unique
// across a failover costs (lease.follow_failover: acquire calls it before it
// draws a fence, and the ownership trigger before it inserts the event),
// against a database whose acquire and trigger do not call it, in the same
// run. It reports the time of an acquire+release cycle of a fresh key from
// the client, each its own transaction, the two databases interleaved
// (us/cycle, cycle-ratio); of 1000 such cycles in one server-side loop, no
// round trip and no commit, the functions' own time, where the check weighs
// most (us/server-cycle, server-ratio); and of one check (us/check).
//
//	go test ./data -run '^$' -bench FailoverCheck -benchtime 3000x
func BenchmarkFailoverCheck(b *testing.B) {
	ctx := context.Background()
	with, without := pgtest.New(b), pgtest.New(b)
	withoutCheck(b, without)
	stores := []*data.Store{with.Store(b), without.Store(b)}
	var cycle [2]time.Duration
	for i := range b.N {
		for j := range stores {
			j = (i + j) % 2 // alternate which goes first
			k := data.Key{Account: "bench", Session: fmt.Sprintf("k%d", i%256)}
			run := uuid.New()
			t0 := time.Now()
			if _, err := stores[j].Acquire(ctx, k, run, time.Minute, "bench"); err != nil {
				b.Fatal(err)
			}
			if _, err := stores[j].Release(ctx, k, run); err != nil {
				b.Fatal(err)
			}
			cycle[j] += time.Since(t0)
		}
	}
	b.StopTimer()
	const loop = `DO $$ BEGIN FOR i IN 1..1000 LOOP
		PERFORM lease.acquire('bench', 'loop-' || i, '00000000-0000-0000-0000-000000000001', '1 minute', 'bench');
		PERFORM lease.release('bench', 'loop-' || i, '00000000-0000-0000-0000-000000000001');
	END LOOP; END $$`
	var server [2]time.Duration
	for range 5 {
		for j, s := range stores {
			t0 := time.Now()
			if _, err := s.Pool().Exec(ctx, loop); err != nil {
				b.Fatal(err)
			}
			server[j] += time.Since(t0)
		}
	}
	t0 := time.Now()
	if _, err := stores[0].Pool().Exec(ctx, `DO $$ BEGIN FOR i IN 1..20000 LOOP IF lease.follow_failover() THEN NULL; END IF; END LOOP; END $$`); err != nil {
		b.Fatal(err)
	}
	check := time.Since(t0) / 20000
	us := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(us(cycle[0], b.N), "us/cycle")
	b.ReportMetric(us(cycle[1], b.N), "us/cycle-without")
	b.ReportMetric(float64(cycle[0])/float64(cycle[1]), "cycle-ratio")
	b.ReportMetric(us(server[0], 5000), "us/server-cycle")
	b.ReportMetric(us(server[1], 5000), "us/server-cycle-without")
	b.ReportMetric(float64(server[0])/float64(server[1]), "server-ratio")
	b.ReportMetric(float64(check.Nanoseconds())/1000, "us/check")
}

// withoutCheck makes db's lease.acquire and the ownership trigger the
// shipped ones without their call of lease.follow_failover.
func withoutCheck(b *testing.B, db pgtest.DB) {
	b.Helper()
	const check = "IF lease.follow_failover() THEN NULL; END IF;"
	conn := db.Conn(b)
	for _, f := range leasesql.Files() {
		for _, name := range []string{"acquire", "on_session_lease_change"} {
			start := strings.Index(f.SQL, "CREATE OR REPLACE FUNCTION lease."+name+"(")
			if start < 0 {
				continue
			}
			end := strings.Index(f.SQL[start:], "\n$fn$;") + start + len("\n$fn$;")
			fn := f.SQL[start:end]
			if !strings.Contains(fn, check) {
				b.Fatalf("lease.%s no longer calls lease.follow_failover as this benchmark expects: update it", name)
			}
			if _, err := conn.Exec(context.Background(), strings.Replace(fn, check, "", 1)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
