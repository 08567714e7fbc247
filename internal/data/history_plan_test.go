package data_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// planOf runs EXPLAIN (ANALYZE, BUFFERS) of sql with args on db and returns
// its nodes ("Node Type on Index Name", a partition's index named by the
// partitioned index it belongs to; "Seq Scan of <relation>" for a
// sequential scan that read a page, see heapScans), the pages it touched,
// and the plan as text.
func planOf(t *testing.T, db pgtest.DB, sql string, args []any) (nodes []string, pages float64, text string) {
	t.Helper()
	ctx := context.Background()
	conn := db.Conn(t)
	var out string
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql, args...).Scan(&out); err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Node Type"] == "Seq Scan" && n["Shared Hit Blocks"].(float64)+n["Shared Read Blocks"].(float64) > 0 {
			nodes = append(nodes, fmt.Sprintf("Seq Scan of %v", n["Relation Name"]))
		} else {
			nodes = append(nodes, fmt.Sprintf("%v on %v", n["Node Type"], partitionedIndex(t, conn, n["Index Name"])))
		}
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			walk(k.(map[string]any))
		}
	}
	walk(doc[0].Plan)
	pages = doc[0].Plan["Shared Hit Blocks"].(float64) + doc[0].Plan["Shared Read Blocks"].(float64)
	rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY OFF, TIMING OFF) `+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgxCollectStrings(rows)
	if err != nil {
		t.Fatal(err)
	}
	return nodes, pages, strings.Join(lines, "\n")
}

// heapScans returns the partitions of lease.event that a plan's nodes
// (planOf's) read sequentially.
func heapScans(nodes []string) []string {
	var out []string
	for _, n := range nodes {
		if rel, ok := strings.CutPrefix(n, "Seq Scan of "); ok && strings.HasPrefix(rel, "event") {
			out = append(out, rel)
		}
	}
	return out
}

// partitionedIndex names a plan's index: the partitioned index of
// lease.event that a partition's index belongs to, else the index itself
// (nil for a node that uses none).
func partitionedIndex(t *testing.T, conn *pgx.Conn, name any) any {
	t.Helper()
	if name == nil {
		return nil
	}
	var parent string
	if err := conn.QueryRow(context.Background(), `SELECT coalesce((SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhparent
		WHERE i.inhrelid = to_regclass(pg_catalog.quote_ident('lease') || '.' || pg_catalog.quote_ident($1))), $1)`, name).Scan(&parent); err != nil {
		t.Fatal(err)
	}
	return parent
}

// TestHistoryReadsAreIndexRanges: the timeline's reads of the
// history, at 10,000 leases and 30 minutes of history at 60 transitions/s
// (108,000 events), are index range scans, never a read of the whole
// table: EventsBetween over 15 minutes for 50 lanes through
// event_key_at_idx, the newest events of the last minute through
// event_at_idx, and OwnersAt for 50 lanes (a scrub step) through
// event_key_at_idx; each touches a bounded number of pages. -v logs the
// plans (docs/BENCHMARKS.md quotes them).
//
//	go test ./data -run TestHistoryReadsAreIndexRanges -count=1 -v
func TestHistoryReadsAreIndexRanges(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	end := historyFixture(t, db, 10000, 60, 30)
	window := data.HistoryFilter{Keys: lanes(50), Since: end.Add(-15 * time.Minute), Until: end}
	owners, ownersArgs := data.OwnersQuery(end.Add(-7*time.Minute), data.HistoryFilter{Keys: lanes(50)})
	for _, q := range []struct {
		name     string
		sql      string
		args     []any
		index    string
		maxPages float64
	}{
		{"EventsBetween, 50 lanes, 15 minutes", "", nil, "event_key_at_idx", 1000},
		{"EventsBetween, newest 50 of the last minute", "", nil, "event_at_idx", 100},
		{"OwnersAt, 50 lanes", owners, ownersArgs, "event_key_at_idx", 2000},
	} {
		switch {
		case strings.HasPrefix(q.name, "EventsBetween, 50"):
			q.sql, q.args = data.EventsBetweenQuery(window)
		case strings.HasPrefix(q.name, "EventsBetween, newest"):
			q.sql, q.args = data.EventsBetweenQuery(data.HistoryFilter{Since: end.Add(-time.Minute), Limit: 50, Descending: true})
		}
		nodes, pages, text := planOf(t, db, q.sql, q.args)
		if seq := heapScans(nodes); len(seq) > 0 {
			t.Errorf("%s: plan scans %v sequentially", q.name, seq)
		}
		if !slices.ContainsFunc(nodes, func(s string) bool { return strings.HasSuffix(s, "on "+q.index) }) {
			t.Errorf("%s: plan %v uses no index %s", q.name, nodes, q.index)
		}
		if pages > q.maxPages {
			t.Errorf("%s: touched %.0f pages, want at most %.0f: a range, not a scan", q.name, pages, q.maxPages)
		}
		t.Logf("%s: %.0f pages\n%s", q.name, pages, text)
	}
}
