package exporter_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestTransitionsExactlyOnceAcrossListenerKill kills the exporter's listener
// backend and, while it reconnects, makes transitions of every kind, each
// from its own psql process. leasetop_transitions_total must then equal
// SELECT kind, count(*) FROM lease.event for every kind: nothing missed.
// A second kill makes the feed re-read the window that holds all of them:
// the counts must not move (nothing counted twice).
func TestTransitionsExactlyOnceAcrossListenerKill(t *testing.T) {
	db := pgtest.New(t)
	pool := db.Pool(t)
	bin := pgtest.PSQLPath(t)
	p := startExporter(t, db.URL)
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool {
		return m[`leasetop_feed_state{state="live"}`] == 1 && m["leasetop_resyncs_total"] >= 1
	})

	// Before the kill: leases to release, force-release and take over later.
	for i := range 5 {
		pgtest.PSQL(t, bin, db.URL, fmt.Sprintf(`SELECT lease.acquire('acct', 'held-%d', '00000000-0000-0000-0000-00000000000%d', '1 hour', 'psql')`, i, i+1))
	}
	for i := range 3 {
		pgtest.PSQL(t, bin, db.URL, fmt.Sprintf(`SELECT lease.acquire('acct', 'short-%d', '00000000-0000-0000-0000-0000000000b%d', '1 millisecond', 'psql')`, i, i))
	}
	waitCounted(t, p, pool, "the transitions before the kill")
	resyncs := p.metrics(t)["leasetop_resyncs_total"]

	killListener(t, pool, db.Name)
	var stmts []string
	for i := range 10 {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.acquire('acct', 'new-%d', gen_random_uuid(), '1 hour', 'psql')`, i))
	}
	for i := range 3 { // expired for a while: a takeover
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.acquire('acct', 'short-%d', gen_random_uuid(), '1 hour', 'psql')`, i))
	}
	for i := range 3 {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.release('acct', 'held-%d', '00000000-0000-0000-0000-00000000000%d')`, i, i+1))
	}
	for i := 3; i < 5; i++ {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.force_release('acct', 'held-%d', NULL, 'exactly-once test')`, i))
	}
	for i := range 2 { // a live lease taken by a preempt
		stmts = append(stmts, fmt.Sprintf(`SELECT * FROM lease.preempt('acct', 'new-%d', gen_random_uuid(), '1 hour', 'psql', 'exactly-once test')`, i))
	}
	for i := range 2 { // a zombie: the run that was taken over above renewing its lost lease
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.renew('acct', 'short-%d', '00000000-0000-0000-0000-0000000000b%d', '1 hour')`, i, i))
	}
	killed := time.Now()
	for _, s := range stmts {
		pgtest.PSQL(t, bin, db.URL, s)
	}
	written := time.Now()
	want := waitCounted(t, p, pool, "every transition made while the listener reconnected")
	t.Logf("FAULT exporter-listener-killed transitions=%d written_in=%v counted_after_last=%v",
		len(stmts), written.Sub(killed).Round(time.Millisecond), time.Since(written).Round(time.Millisecond))
	for kind, n := range map[string]int64{"acquired": 18, "taken_over": 3, "released": 3, "force_released": 2, "renew_rejected": 2, "preempted": 2} {
		if want[kind] != n {
			t.Fatalf("lease.event has %d %s events, want %d (the test's own transitions)", want[kind], kind, n)
		}
	}
	m := p.metrics(t)
	if m["leasetop_resyncs_total"] <= resyncs {
		t.Fatalf("leasetop_resyncs_total = %g after the kill, want more than %g: the listener was not reconnected", m["leasetop_resyncs_total"], resyncs)
	}

	// The next resync re-reads every event above: none may count twice.
	resyncs = m["leasetop_resyncs_total"]
	killListener(t, pool, db.Name)
	m = p.waitMetrics(t, 30*time.Second, "a resync after the second kill", func(m metricSet) bool {
		return m["leasetop_resyncs_total"] > resyncs && m[`leasetop_feed_state{state="live"}`] == 1
	})
	if got := m.transitions(); !maps.Equal(got, want) {
		t.Fatalf("after a resync re-read them, leasetop_transitions_total = %v, want %v (lease.event)", got, want)
	}
}

// waitCounted waits until the exporter has counted as many transitions as
// lease.event holds, then checks every kind matches exactly, and returns the
// database's counts.
func waitCounted(t *testing.T, p *exporterProc, pool *pgxpool.Pool, what string) map[string]int64 {
	t.Helper()
	want := dbTransitions(t, pool)
	var total int64
	for _, n := range want {
		total += n
	}
	m := p.waitMetrics(t, 30*time.Second, what, func(m metricSet) bool {
		var got int64
		for _, n := range m.transitions() {
			got += n
		}
		return got >= total
	})
	if got := m.transitions(); !maps.Equal(got, want) {
		t.Fatalf("%s: leasetop_transitions_total = %v, want %v (SELECT kind, count(*) FROM lease.event)", what, got, want)
	}
	return want
}

// killListener terminates the exporter's listener backend.
func killListener(t *testing.T, pool *pgxpool.Pool, dbName string) {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM (
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		 WHERE application_name = 'leasetop listener' AND datname = $1) k`, dbName).Scan(&n)
	if err != nil {
		t.Fatalf("terminate the listener: %v", err)
	}
	if n != 1 {
		t.Fatalf("terminated %d listener backends, want 1", n)
	}
}
