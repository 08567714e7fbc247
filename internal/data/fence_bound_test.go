package data_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/sqlcall"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestFenceRaceReadPrunesPartitions: the fence-race check of a fresh grant
// (lease.higher_fences, read by lease.acquire and lease.preempt) is bounded
// by time, so with 30 daily partitions of history an acquire and a preempt
// of a free key read (scan the index of) only the partitions around now
// (the day's, and its neighbour within the hour's margin), not every day
// kept, also once PostgreSQL has cached the check's generic plan, which
// prunes when it starts executing. Before the bound each call probed all 40
// partitions. The read happens only when another fence was drawn after the
// call's (lease.fence_overtaken): a trigger of the test's draws one after
// every INSERT, and without it the calls read no partition at all. -v logs
// how many partitions each call locked (PostgreSQL 15 locks them all for a
// generic plan; see higher_fences).
//
//	go test ./data -run TestFenceRaceReadPrunesPartitions -count=1 -v
func TestFenceRaceReadPrunesPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := monthConn(t)
	var parts int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event_partitions()`).Scan(&parts); err != nil || parts < 31 {
		t.Fatalf("%d partitions (%v), want at least 30 days and the default", parts, err)
	}
	calls := []struct{ name, sql string }{
		{"acquire", `SELECT count(*) FROM lease.acquire('acct', $1, gen_random_uuid(), '1 minute', 'h')`},
		{"preempt", `SELECT count(*) FROM lease.preempt('acct', $1, gen_random_uuid(), '1 minute', 'h', 'test')`},
	}
	// Nobody else drew a fence: nothing to read.
	for _, call := range calls {
		if read, _ := partitionsRead(t, conn, call.sql, call.name+"-alone"); len(read) != 0 {
			t.Errorf("%s of a free key with no fence drawn after its own read %v, want no partition", call.name, read)
		}
	}
	if _, err := conn.Exec(ctx, `
		CREATE FUNCTION public.draw_a_fence() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM nextval('lease.fence_seq'); RETURN NULL; END $$;
		CREATE TRIGGER draw_a_fence AFTER INSERT ON lease.session_lease
		FOR EACH ROW EXECUTE FUNCTION public.draw_a_fence()`); err != nil {
		t.Fatal(err)
	}
	for _, call := range calls {
		// PostgreSQL plans a statement for its values on its first five
		// runs and then settles on the generic plan: check the first and a
		// later run.
		for i := range 8 {
			read, locked := partitionsRead(t, conn, call.sql, fmt.Sprintf("%s-%d", call.name, i))
			if i != 0 && i < 7 {
				continue
			}
			var far []string
			for _, p := range read {
				if !p.near {
					far = append(far, p.name)
				}
			}
			if len(read) == 0 || len(read) > 2 || len(far) > 0 {
				t.Errorf("%s #%d of a free key read %d of %d partitions of lease.event (%v), %v of them not within an hour of now; want the day's (and its neighbour within the hour)",
					call.name, i, len(read), parts, read, far)
			}
			t.Logf("%s #%d: read %v, locked %d of %d partitions", call.name, i, read, locked, parts)
		}
	}

	// The check's generic plan prunes when it starts executing.
	if _, err := conn.Exec(ctx, `PREPARE hf(text, text, bigint, timestamptz, timestamptz) AS SELECT FROM lease.higher_fences($1, $2, $3, $4, $5);
		SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	var out string
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE hf('acct', 'acquire-0', 0, clock_timestamp(), clock_timestamp())`,
		pgx.QueryExecModeSimpleProtocol).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	removed, scanned := 0.0, 0
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if r, ok := n["Subplans Removed"].(float64); ok {
			removed += r
		}
		if _, ok := n["Relation Name"]; ok {
			scanned++
		}
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(doc[0].Plan)
	t.Logf("generic plan: %d partitions scanned, %.0f removed at execution", scanned, removed)
	if scanned == 0 || scanned > 2 || int(removed)+scanned != parts {
		t.Errorf("the generic plan of higher_fences scans %d partitions and removes %.0f of %d at execution, want at most 2 scanned and the rest removed:\n%s", scanned, removed, parts, out)
	}
}

// readPartition is a partition of lease.event a transaction scanned, and
// whether its days come within an hour of the server's clock.
type readPartition struct {
	name string
	near bool
}

// partitionsRead runs sql (an acquire or preempt of key) in a transaction
// it rolls back, and returns the partitions of lease.event the transaction
// scanned (pg_stat_xact_user_tables) and how many it locked.
func partitionsRead(t *testing.T, conn *pgx.Conn, sql, key string) ([]readPartition, int) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's own transaction
	var granted int
	if err := tx.QueryRow(ctx, sql, key).Scan(&granted); err != nil || granted != 1 {
		t.Fatalf("%s %s: %d rows (%v), want a grant", sql, key, granted, err)
	}
	var locked int
	if err := tx.QueryRow(ctx, `SELECT count(DISTINCT l.relation) FROM pg_locks l JOIN lease.event_partitions() ep ON ep.part = l.relation
		WHERE l.pid = pg_backend_pid()`).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `
		SELECT ep.part::text, coalesce(ep.lo, '-infinity') < clock_timestamp() + interval '1 hour'
		                      AND coalesce(ep.hi, 'infinity') > clock_timestamp() - interval '1 hour' AND NOT ep.is_default
		  FROM pg_stat_xact_user_tables s JOIN lease.event_partitions() ep ON ep.part = s.relid
		 WHERE coalesce(s.idx_scan, 0) + s.seq_scan > 0 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var out []readPartition
	for rows.Next() {
		var p readPartition
		if err := rows.Scan(&p.name, &p.near); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, locked
}

// TestNotifyAfterCommitPrunesPartitions: the library's notifications after
// a commit read as little of lease.event as they can. An acquire's and a
// release's send the payload the trigger kept (sqlcall.NotifyPending) and read
// no partition at all: their read-back of the key's last events was a tenth
// of a cycle's server CPU. The operator's forced release still reads its
// event back (ForceReleaseQuiet), and keeps to the partitions within an
// hour of now once its plan is generic: with 30 daily partitions of history
// and the days made ahead, the executed plan reads today's partition (and
// the next or previous day's within an hour of midnight), nothing else.
// Before its bound it probed every partition; with a bound below only, it
// still read the seven days ahead and DEFAULT.
func TestNotifyAfterCommitPrunesPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := monthConn(t)
	var parts int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event_partitions()`).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for i, q := range []struct {
		name     string
		call     sqlcall.QuietCall
		min, max int // partitions read
	}{
		{"acquire", sqlcall.AcquireQuiet, 0, 0},
		{"release", sqlcall.ReleaseQuiet, 0, 0},
		{"force_release", sqlcall.ForceReleaseQuiet, 1, 2},
	} {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`PREPARE n%d(text, text, uuid) AS %s`, i, q.call.Notify.SQL)); err != nil {
			t.Fatal(err)
		}
		var out string
		if err := conn.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE n%d('acct', 'notify', gen_random_uuid())`, i),
			pgx.QueryExecModeSimpleProtocol).Scan(&out); err != nil {
			t.Fatal(err)
		}
		if read := strings.Count(out, `"Relation Name": "event_`); read < q.min || read > q.max {
			t.Errorf("%s: the notification's generic plan reads %d of %d partitions, want %d to %d:\n%s",
				q.name, read, parts, q.min, q.max, out)
		}
	}
}

// TestQuietEventIDReadsNoPartition: lease.quiet_event_id, the event id
// acquire_quiet and release_quiet return, comes from the payload the trigger
// kept in the session: it reads no partition of lease.event (it read the
// key's last events, and with a bound below only, every day made ahead and
// DEFAULT too).
func TestQuietEventIDReadsNoPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := monthConn(t)
	if _, err := conn.Exec(ctx, `SELECT lease.quiet_event_id('plan', 'plan', gen_random_uuid(), ARRAY['acquired']);
		SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	read, _ := partitionsRead(t, conn,
		`SELECT count(*)::int FROM (SELECT lease.quiet_event_id($1, $1, gen_random_uuid(), ARRAY['acquired'])) q`, "quiet")
	if len(read) != 0 {
		t.Errorf("quiet_event_id read %d partitions, want none: %v", len(read), read)
	}
}

// monthConn is a connection to a new database holding 30 days of history
// in daily partitions (monthFixture), 300 events a day.
func monthConn(t *testing.T) *pgx.Conn {
	t.Helper()
	db := pgtest.New(t)
	monthFixture(t, db, 30, 300)
	return db.Conn(t)
}
