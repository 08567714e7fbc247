package data_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestChangedInReadsItsPagesAlone: a read of a slice of
// the lease table's pages returns the leases renewed since the time given
// whose rows lie in those pages, and no other; the slices of a walk over
// the table return every renewed lease exactly once; the plan of its join
// (ChangedIn's form) is a TID range scan, which reads those pages alone.
func TestChangedInReadsItsPagesAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	seedLeases(t, db, `INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		SELECT 'acct', 'sess-' || g, gen_random_uuid(), 'device', g,
		       now() - interval '1 hour', now() - interval '10 minutes', now() + interval '1 hour'
		  FROM generate_series(1, 2000) g`)
	conn := db.Conn(t)
	// Every 7th lease renewed now; the page each lies in, as the server says.
	renewed := map[string]int64{}
	rows, err := conn.Query(ctx, `UPDATE lease.session_lease SET renewed_at = now()
		 WHERE substr(session_id, 6)::int % 7 = 0 RETURNING session_id`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	rows, err = conn.Query(ctx, `SELECT session_id, (ctid::text::point)[0]::bigint FROM lease.session_lease WHERE renewed_at > now() - interval '1 minute'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var page int64
		if err := rows.Scan(&s, &page); err != nil {
			t.Fatal(err)
		}
		renewed[s] = page
	}
	if rows.Err() != nil || len(renewed) != 2000/7 {
		t.Fatalf("%d renewed leases (%v), want %d", len(renewed), rows.Err(), 2000/7)
	}
	s := db.Store(t)
	pages, err := s.LeasePages(ctx)
	if err != nil || pages < 4 {
		t.Fatalf("the table has %d pages (%v), want several", pages, err)
	}
	since := time.Now().Add(-time.Minute)
	seen := map[string]int{}
	for from := int64(0); from < pages; from += 2 {
		p := data.Pages{From: from, To: from + 2}
		if p.To >= pages {
			p.To = -1
		}
		snap, err := s.ChangedIn(ctx, since, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range snap.Leases {
			seen[l.Session]++
			if page := renewed[l.Session]; page < p.From || (p.To >= 0 && page >= p.To) {
				t.Errorf("slice %v returned %s, which lies in page %d", p, l.Session, page)
			}
		}
	}
	for sess := range renewed {
		if seen[sess] != 1 {
			t.Errorf("%s read %d times in one walk, want once", sess, seen[sess])
		}
	}
	if len(seen) != len(renewed) {
		t.Errorf("the walk returned %d leases, want the %d renewed", len(seen), len(renewed))
	}

	var plan strings.Builder
	rows, err = conn.Query(ctx, `EXPLAIN SELECT * FROM (SELECT now() AS t) n LEFT JOIN lease.session_lease l
		ON l.ctid >= ('(' || $1::bigint || ',0)')::pg_catalog.tid AND l.ctid < ('(' || $2::bigint || ',0)')::pg_catalog.tid AND l.renewed_at > $3`,
		int64(1), int64(3), since)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "Tid Range Scan") {
		t.Errorf("a slice's read is not a TID range scan:\n%s", plan.String())
	}
}
