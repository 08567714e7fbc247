package data_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// monthFixture writes, as the superuser, days days of history ending now at
// perDay events a day over 1000 sessions of account "bench" (s1..s1000),
// moves them into a partition per day (MaintainEvents), and analyzes. It
// returns the server time the history ends at.
func monthFixture(t testing.TB, db pgtest.DB, days, perDay int) time.Time {
	t.Helper()
	ctx := context.Background()
	conn := db.Conn(t)
	var end time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&end); err != nil {
		t.Fatal(err)
	}
	// The rows start at the midnight UTC that begins the day days ago, so the
	// oldest partition holds a whole day's rows whatever the hour: from end
	// minus days it held end's time of day's worth, and late in the UTC day
	// a few minutes' rows, which the planner reads sequentially.
	span := end.Sub(end.Add(-time.Duration(days) * 24 * time.Hour).UTC().Truncate(24 * time.Hour))
	n := days * perDay
	dropFloor(t, db)
	if _, err := conn.Exec(ctx, `
		INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, expires_at, holder, actor)
		SELECT $1::timestamptz - ($2 - j) * ($3::interval / $2),
		       CASE WHEN j % 10 = 0 THEN 'renew_rejected' ELSE 'taken_over' END,
		       'bench', 's' || (1 + (j::bigint * 7919) % 1000), gen_random_uuid(), gen_random_uuid(), j,
		       $1::timestamptz - ($2 - j) * ($3::interval / $2) + interval '30 s', 'device-' || (j % 50), 'bench'
		  FROM generate_series(1, $2) j`, end, n, span); err != nil {
		t.Fatalf("month fixture: %v", err)
	}
	if _, err := db.Store(t).MaintainEvents(ctx, data.MaintainOptions{}); err != nil {
		t.Fatalf("month fixture: %v", err)
	}
	// Moving the rows out of the DEFAULT partition left it their dead
	// tuples, which autovacuum reclaims soon after; the fixture does not wait.
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE lease.event`); err != nil {
		t.Fatal(err)
	}
	return end
}

// heapsRead returns the relations (partitions) whose rows the plan read:
// the scan nodes that ran and returned rows.
func heapsRead(t *testing.T, db pgtest.DB, sql string, args []any) map[string]bool {
	t.Helper()
	var out string
	if err := db.Conn(t).QueryRow(context.Background(), `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql, args...).Scan(&out); err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if rel, ok := n["Relation Name"].(string); ok && n["Actual Rows"].(float64) > 0 {
			read[rel] = true
		}
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(doc[0].Plan)
	return read
}

// TestPartitionedReadsWith30Days: with 30 daily partitions of
// history (3000 events a day), each read the issue names stays an index
// read: poll and catch-up by id, the detail view by session, the timeline by
// time range and a scrub step (OwnersAt). None reads more than one
// partition's heap sequentially (today's partition may be small enough for
// the planner to prefer that), the reads by time read rows from at most the
// two partitions their range covers, and each touches a bounded number of
// pages. -v logs the plans (docs/BENCHMARKS.md quotes
// them).
//
//	go test ./data -run TestPartitionedReadsWith30Days -count=1 -v
func TestPartitionedReadsWith30Days(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	end := monthFixture(t, db, 30, 3000)
	conn := db.Conn(t)
	today := "event_" + end.UTC().Format("20060102") // the partition end falls in (partitions are UTC days)
	var parts int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event_partitions()`).Scan(&parts); err != nil || parts < 31 {
		t.Fatalf("%d partitions (%v), want at least 30 days and the default", parts, err)
	}
	var top, mid int64
	if err := conn.QueryRow(ctx, `SELECT max(id), (SELECT min(id) FROM lease.event WHERE at > $1) FROM lease.event`,
		end.Add(-15*24*time.Hour)).Scan(&top, &mid); err != nil {
		t.Fatal(err)
	}
	owners, ownersArgs := data.OwnersQuery(end.Add(-7*time.Minute), data.HistoryFilter{Keys: lanes(50)})
	lanesSQL, lanesArgs := data.EventsBetweenQuery(data.HistoryFilter{Keys: lanes(50), Since: end.Add(-6 * time.Hour), Until: end})
	newestSQL, newestArgs := data.EventsBetweenQuery(data.HistoryFilter{Since: end.Add(-time.Hour), Limit: 50, Descending: true})
	for _, q := range []struct {
		name     string
		sql      string
		args     []any
		index    string
		byTime   bool
		maxPages float64
	}{
		{"poll, idle", data.PollSQL, []any{top, 1000}, "_id_key", false, 5 * float64(parts)},
		{"catch-up by id, 1000 events from 15 days ago", data.EventsSinceSQL, []any{mid, 1000}, "_id_key", false, 5*float64(parts) + 1000},
		{"detail view: one session's newest 50", data.EventsForSQL, []any{"bench", "s7", 50}, " on event_session_idx", false, 15*float64(parts) + 100},
		{"timeline: 50 lanes, last 6 hours", lanesSQL, lanesArgs, "_at_idx", true, 2000},
		{"timeline: newest 50 of the last hour", newestSQL, newestArgs, " on event_at_idx", true, 100},
		{"scrub step: OwnersAt, 50 lanes", owners, ownersArgs, " on event_key_at_idx", false, 50 * 5 * float64(parts)},
	} {
		nodes, pages, text := planOf(t, db, q.sql, q.args)
		// A plan may scan one partition in several nodes (OwnersAt: one per
		// part of the query): count partitions, not nodes. Only today's may
		// be read sequentially, and only while it is small (shortly after
		// midnight UTC its rows are minutes' worth).
		seq := slices.Compact(slices.Sorted(slices.Values(heapScans(nodes))))
		if len(seq) > 1 || (len(seq) == 1 && seq[0] != today) {
			t.Errorf("%s: plan scans partitions %v sequentially, want at most today's (%s)", q.name, seq, today)
		}
		if len(seq) == 0 && !slices.ContainsFunc(nodes, func(n string) bool { return strings.HasSuffix(n, q.index) }) {
			t.Errorf("%s: plan %v uses no index ending %q", q.name, nodes, q.index)
		}
		if pages > q.maxPages {
			t.Errorf("%s: touched %.0f pages, want at most %.0f", q.name, pages, q.maxPages)
		}
		read := heapsRead(t, db, q.sql, q.args)
		if q.byTime && len(read) > 2 {
			t.Errorf("%s: read rows of %d partitions %v, want at most the 2 its range covers", q.name, len(read), read)
		}
		t.Logf("%s: %.0f pages, rows from %d partitions\n%s", q.name, pages, len(read), text)
	}
}

// TestHistoryReadsPlanEachTime: the history reads by time (EventsBetween,
// OwnersAt, Replay) never run a generic plan, so PostgreSQL plans each with
// its times and prunes the daily partitions; a prepared statement's generic
// plan, used from its sixth run, reads every partition's index, DEFAULT
// included (the scrub step's 50 lanes: a Merge Append of every partition
// per lane instead of the newest partitions in order). EventsBetween runs
// unprepared; OwnersAt and Replay, one pipeline each, are prepared but
// planned each time (plan_cache_mode in their transaction). Fails when they
// run as cached prepared statements with the server's default plan choice.
func TestHistoryReadsPlanEachTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	end := monthFixture(t, db, 3, 100)
	s := pgtest.OpenStore(t, withParam(db.URL, "pool_max_conns=1"), data.Options{})
	for range 8 {
		if _, err := s.OwnersAt(ctx, end.Add(-time.Hour), data.HistoryFilter{Keys: lanes(5)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EventsBetween(ctx, data.HistoryFilter{Keys: lanes(5), Since: end.Add(-2 * time.Hour), Until: end}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Replay(ctx, data.HistoryFilter{Keys: lanes(5), Since: end.Add(-2 * time.Hour), Until: end}); err != nil {
			t.Fatal(err)
		}
	}
	var prepared []string
	rows, err := s.Pool().Query(ctx, `SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%lease.event%' AND statement NOT LIKE '%pg_prepared_statements%' AND cardinality(parameter_types) > 0 AND generic_plans > 0`)
	if err != nil {
		t.Fatal(err)
	}
	if prepared, err = pgxCollectStrings(rows); err != nil || len(prepared) != 0 {
		t.Errorf("%d history reads ran a generic plan (%v), want none:\n%s", len(prepared), err, strings.Join(prepared, "\n---\n"))
	}
}
