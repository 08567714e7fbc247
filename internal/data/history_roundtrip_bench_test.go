package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// BenchmarkHistoryRoundTrips measures what sending the history's reads as
// one pipeline saves, against the same statements sent one at a time in
// the same snapshot (BEGIN, each statement, COMMIT: what OwnersAt did
// before), interleaved in one run, on 10,000 leases and 15 minutes of
// history at 100 transitions a second (90,000 events), 50 lanes, from 14
// minutes ago (inside the history kept: a start before it costs Replay a
// second round trip, and the serial read two more statements):
//
//   - open: Replay (who held the lanes at the window's start, their events
//     since, the TRUNCATEs since: one round trip), ms/open, against
//     ms/open-serial (six);
//   - scrub: OwnersAt at a stepping instant (one round trip), ms/scrub,
//     against ms/scrub-serial (four).
//
// On a quiet machine a round trip costs tens of microseconds; on a loaded
// one each is a wait for the server's process and back, which is what the
// ratios show. Give the load beside them.
//
//	go test ./data -run '^$' -bench HistoryRoundTrips -benchtime 200x
func BenchmarkHistoryRoundTrips(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	end := historyFixture(b, db, 10000, 100, 15)
	s := db.Store(b)
	f := data.HistoryFilter{Keys: lanes(50), Since: end.Add(-14 * time.Minute)}
	var open, openSerial, scrub, scrubSerial time.Duration
	timed := func(sum *time.Duration, call func() error) {
		t0 := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		*sum += time.Since(t0)
	}
	b.ResetTimer()
	for i := range b.N {
		at := end.Add(-time.Duration(i%800) * time.Second)
		timed(&open, func() error { _, err := s.Replay(ctx, f); return err })
		timed(&openSerial, func() error { return serialRead(ctx, s, f, f.Since, true) })
		timed(&scrubSerial, func() error { return serialRead(ctx, s, f, at, false) })
		timed(&scrub, func() error { _, err := s.OwnersAt(ctx, at, f); return err })
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(b.N) / float64(time.Millisecond) }
	b.ReportMetric(per(open), "ms/open")
	b.ReportMetric(per(openSerial), "ms/open-serial")
	b.ReportMetric(per(scrub), "ms/scrub")
	b.ReportMetric(per(scrubSerial), "ms/scrub-serial")
	b.ReportMetric(float64(openSerial)/float64(open), "open-serial/open")
	b.ReportMetric(float64(scrubSerial)/float64(scrub), "scrub-serial/scrub")
}

// serialRead sends OwnersAt's statements (and, for an open, Replay's
// events and TRUNCATEs) one at a time in one read-only repeatable-read
// transaction, reading every row.
func serialRead(ctx context.Context, s *data.Store, f data.HistoryFilter, at time.Time, open bool) error {
	return pgx.BeginTxFunc(ctx, s.Pool(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var now time.Time
		var start *time.Time
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp(), (SELECT min(at) FROM lease.event)`).Scan(&now, &start); err != nil {
			return err
		}
		queries := [][]any{}
		q, args := data.OwnersQuery(at, f)
		queries = append(queries, append([]any{q}, args...))
		if open {
			q, args = data.EventsBetweenQuery(f)
			queries = append(queries, append([]any{q}, args...))
			trunc := data.HistoryFilter{Keys: []data.Key{{}}, Kinds: []data.Kind{data.KindTruncated}, Since: f.Since}
			q, args = data.EventsBetweenQuery(trunc)
			queries = append(queries, append([]any{q}, args...))
		}
		for _, qa := range queries {
			rows, err := tx.Query(ctx, qa[0].(string), qa[1:]...)
			if err != nil {
				return err
			}
			for rows.Next() {
				if _, err := rows.Values(); err != nil {
					rows.Close()
					return err
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
}
