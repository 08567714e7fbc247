package data_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// BenchmarkHistory measures the timeline's reads of the history at 100,000
// live leases and 30 minutes of history at 1000 transitions/s (1.8 million
// events), against baselines in the same run, interleaved:
//
//   - open: EventsBetween of 50 lanes over the last 15 minutes (opening the
//     timeline), ms/open;
//   - scrub: OwnersAt of the same 50 lanes at an instant that steps through
//     those 15 minutes (one scrub step), ms/scrub;
//   - the baselines: LeasesFor of the 50 lanes (their present rows, what the
//     live table reads), ms/lanes-now; Snapshot of all 100,000 leases (the
//     monitor's full read), ms/snapshot; and the 50 lanes' 15 minutes read
//     by time alone, through event_at_idx, as if event_key_at_idx did not
//     exist (every event of the window, filtered), ms/window-scan.
//
// Ratios: open/snapshot, scrub/snapshot, scrub/lanes-now,
// window-scan/open. Once, outside the loop: OwnersAt of every lease 5
// minutes ago (ls --at without a filter), ms/ls-at-all.
//
//	go test ./data -run '^$' -bench History -benchtime 20x -timeout 30m
func BenchmarkHistory(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	end := historyFixture(b, db, 100000, 1000, 30)
	s := db.Store(b)
	keys := lanes(50)
	since := end.Add(-15 * time.Minute)
	accts, sesss := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		accts[i], sesss[i] = k.Account, k.Session
	}
	// The same 50 lanes' window, read by time only: the keys' condition is an
	// expression event_key_at_idx cannot serve.
	const windowScan = `SELECT count(*) FROM lease.event e
		WHERE e.at >= $1 AND e.at < $2
		  AND (e.account_id || '', e.session_id || '') IN (SELECT k.a, k.s FROM unnest($3::text[], $4::text[]) k(a, s))`
	var open, scrub, now, snap, scan time.Duration
	var opened, held int
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		evs, err := s.EventsBetween(ctx, data.HistoryFilter{Keys: keys, Since: since, Until: end})
		if err != nil {
			b.Fatal(err)
		}
		open += time.Since(t0)
		opened = len(evs)

		at := since.Add(time.Duration(i%90) * 10 * time.Second)
		t0 = time.Now()
		o, err := s.OwnersAt(ctx, at, data.HistoryFilter{Keys: keys})
		if err != nil {
			b.Fatal(err)
		}
		scrub += time.Since(t0)
		held = len(o.Holdings)

		t0 = time.Now()
		if _, err := s.LeasesFor(ctx, keys); err != nil {
			b.Fatal(err)
		}
		now += time.Since(t0)

		t0 = time.Now()
		if _, err := s.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		snap += time.Since(t0)

		t0 = time.Now()
		var n int
		if err := s.Pool().QueryRow(ctx, windowScan, since, end, accts, sesss).Scan(&n); err != nil {
			b.Fatal(err)
		}
		scan += time.Since(t0)
		if n != opened {
			b.Fatalf("window scan counted %d events, EventsBetween returned %d", n, opened)
		}
	}
	b.StopTimer()
	var all time.Duration
	var allHeld int
	for range 3 {
		t0 := time.Now()
		o, err := s.OwnersAt(ctx, end.Add(-5*time.Minute), data.HistoryFilter{})
		if err != nil {
			b.Fatal(err)
		}
		all += time.Since(t0)
		allHeld = len(o.Holdings)
	}
	ms := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(ms(open, b.N), "ms/open")
	b.ReportMetric(ms(scrub, b.N), "ms/scrub")
	b.ReportMetric(ms(now, b.N), "ms/lanes-now")
	b.ReportMetric(ms(snap, b.N), "ms/snapshot")
	b.ReportMetric(ms(scan, b.N), "ms/window-scan")
	b.ReportMetric(float64(open)/float64(snap), "open/snapshot")
	b.ReportMetric(float64(scrub)/float64(snap), "scrub/snapshot")
	b.ReportMetric(float64(scrub)/float64(now), "scrub/lanes-now")
	b.ReportMetric(float64(scan)/float64(open), "window-scan/open")
	b.ReportMetric(ms(all, 3), "ms/ls-at-all")
	b.ReportMetric(float64(opened), "events/open")
	b.ReportMetric(float64(held), "held/scrub")
	b.ReportMetric(float64(allHeld), "held/ls-at-all")
}

// BenchmarkHistoryIndexCost measures what event_key_at_idx costs each
// transition (one more index entry per event row): acquire+release cycles
// of fresh keys, each call its own transaction, against a database without
// the index, interleaved (us/cycle, us/cycle-without, cycle-ratio); and the
// functions' own time in one server-side loop of 1000 cycles, no round trip
// (us/server-cycle, server-ratio).
//
//	go test ./data -run '^$' -bench HistoryIndexCost -benchtime 3000x
func BenchmarkHistoryIndexCost(b *testing.B) {
	ctx := context.Background()
	with, without := pgtest.New(b), pgtest.New(b)
	if _, err := without.Conn(b).Exec(ctx, `DROP INDEX lease.event_key_at_idx`); err != nil {
		b.Fatal(err)
	}
	interleavedCycles(b, with.Store(b), without.Store(b))
}

// interleavedCycles times acquire+release cycles of fresh keys on with and
// without, alternating, and the functions' own time in a server-side loop,
// and reports both and their ratios (BenchmarkHistoryIndexCost's metrics).
func interleavedCycles(b *testing.B, with, without *data.Store) {
	ctx := context.Background()
	stores := []*data.Store{with, without}
	var cycle [2]time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j := range stores {
			j = (i + j) % 2 // alternate which goes first
			k := data.Key{Account: "bench", Session: "k" + strconv.Itoa(i)}
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
	for r := range 10 {
		for j := range stores {
			j = (r + j) % 2
			t0 := time.Now()
			if _, err := stores[j].Pool().Exec(ctx, loop); err != nil {
				b.Fatal(err)
			}
			server[j] += time.Since(t0)
		}
	}
	us := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(us(cycle[0], b.N), "us/cycle")
	b.ReportMetric(us(cycle[1], b.N), "us/cycle-without")
	b.ReportMetric(float64(cycle[0])/float64(cycle[1]), "cycle-ratio")
	b.ReportMetric(us(server[0], 10000), "us/server-cycle")
	b.ReportMetric(us(server[1], 10000), "us/server-cycle-without")
	b.ReportMetric(float64(server[0])/float64(server[1]), "server-ratio")
}
