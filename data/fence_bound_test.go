package data_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgtest"
)

// TestFenceRaceReadPrunesPartitions: the fence-race check of a fresh grant
// (lease.higher_fences, read by lease.acquire and lease.preempt) is bounded
// by time, so with 30 daily partitions of history an acquire and a preempt
// of a free key lock only the partitions around now (the day's, and its
// neighbour within the hour's margin), not every day kept; and the check's
// generic plan, had PostgreSQL cached one, skips the other partitions at
// execution. Before the bound each call locked all 40 partitions.
//
//	go test ./data -run TestFenceRaceReadPrunesPartitions -count=1 -v
func TestFenceRaceReadPrunesPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	monthFixture(t, db, 30, 300)
	conn := db.Conn(t)
	var parts int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event_partitions()`).Scan(&parts); err != nil || parts < 31 {
		t.Fatalf("%d partitions (%v), want at least 30 days and the default", parts, err)
	}
	for _, call := range []struct{ name, sql string }{
		{"acquire", `SELECT count(*) FROM lease.acquire('acct', $1, gen_random_uuid(), '1 minute', 'h')`},
		{"preempt", `SELECT count(*) FROM lease.preempt('acct', $1, gen_random_uuid(), '1 minute', 'h', 'test')`},
	} {
		// PostgreSQL settles a statement's plan after its first runs (the
		// sixth builds a generic plan to compare): count on a later run.
		for i := range 8 {
			locked := partitionsLocked(t, conn, call.sql, fmt.Sprintf("%s-%d", call.name, i))
			if i < 7 {
				continue
			}
			var far []string
			for _, p := range locked {
				if !p.near {
					far = append(far, p.name)
				}
			}
			if len(locked) == 0 || len(locked) > 2 || len(far) > 0 {
				t.Errorf("%s of a free key locked %d of %d partitions of lease.event (%v), %v of them not within an hour of now; want the day's (and its neighbour within the hour)",
					call.name, len(locked), parts, locked, far)
			}
			t.Logf("%s: locked %v of %d partitions", call.name, locked, parts)
		}
	}

	// The check's generic plan prunes at execution (PostgreSQL 15 still
	// locks every partition for it, which is why the callers pass plain
	// values that a custom plan prunes at planning).
	if _, err := conn.Exec(ctx, `PREPARE hf(text, text, bigint, timestamptz, timestamptz) AS SELECT FROM lease.higher_fences($1, $2, $3, $4, $5);
		SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	var out string
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE hf('acct', 'acquire-0', 0, clock_timestamp() - interval '1 hour', clock_timestamp() + interval '1 hour')`,
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
	if scanned == 0 || scanned > 2 || int(removed)+scanned != parts {
		t.Errorf("the generic plan of higher_fences scans %d partitions and removes %.0f of %d at execution, want at most 2 scanned and the rest removed:\n%s", scanned, removed, parts, out)
	}
}

// lockedPartition is a partition of lease.event a transaction held a lock
// on, and whether its days come within an hour of the server's clock.
type lockedPartition struct {
	name string
	near bool
}

// partitionsLocked runs sql (an acquire or preempt of key) in a transaction
// it rolls back, and returns the partitions of lease.event the transaction
// locked.
func partitionsLocked(t *testing.T, conn *pgx.Conn, sql, key string) []lockedPartition {
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
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT ep.part::text, coalesce(ep.lo, '-infinity') < clock_timestamp() + interval '1 hour'
		                                AND coalesce(ep.hi, 'infinity') > clock_timestamp() - interval '1 hour' AND NOT ep.is_default
		  FROM pg_locks l JOIN lease.event_partitions() ep ON ep.part = l.relation
		 WHERE l.pid = pg_backend_pid() ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var out []lockedPartition
	for rows.Next() {
		var p lockedPartition
		if err := rows.Scan(&p.name, &p.near); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
