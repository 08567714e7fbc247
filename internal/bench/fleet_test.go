package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestIdleCostWorkload runs the opt-in idle-cost workload on a few
// thousand leases: both feeds report their backends' server CPU and the
// renewals they saw, and the feed that reads the whole table (the table fits
// one slice here, so both do) sees them within the window.
func TestIdleCostWorkload(t *testing.T) {
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 3 * time.Second, Warmup: 100 * time.Millisecond,
		Only: []string{"idle-cost"}, MonitorLeases: 3000,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	byName := results(t, rep)
	for _, name := range []string{"idle-cost-whole", "idle-cost-sweep"} {
		r := byName[name]
		if r.CPUPct <= 0 || r.Ops == 0 || r.P50ms <= 0 || !strings.Contains(r.Note, "server cpu") {
			t.Errorf("%s = %+v, want the server CPU of its backends and renewals seen", name, r)
		}
	}
	assertCleanedUp(t, db.Conn(t))
}

// TestMonitorContextsWorkload runs the opt-in monitor-contexts workload on
// five databases of a few hundred leases: the first picture of them all,
// the keys timed to their frames, the active window's CPU and memory; the
// four databases it made are dropped.
func TestMonitorContextsWorkload(t *testing.T) {
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Only: []string{"monitor-contexts"}, MonitorLeases: 300,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	byName := results(t, rep)
	if r := byName["monitor-contexts-load"]; r.P50ms <= 0 || r.RSSMB <= 0 {
		t.Errorf("monitor-contexts-load = %+v, want a load time and resident memory", r)
	}
	for name, keys := range map[string]uint64{"monitor-contexts-sort": 4, "monitor-contexts-filter": 10} {
		if r := byName[name]; r.Ops != keys || r.P50ms <= 0 {
			t.Errorf("%s = %+v, want %d keys timed to their frames", name, r, keys)
		}
	}
	if r := byName["monitor-contexts-active"]; r.CPUPct <= 0 || r.RSSMB <= 0 {
		t.Errorf("monitor-contexts-active = %+v, want CPU and resident memory", r)
	}
	var left int
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM pg_database WHERE datname LIKE 'lease\_bench\_%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d bench databases left (%v), want the 4 dropped", left, err)
	}
	assertCleanedUp(t, db.Conn(t))
}

// results indexes rep's results by name, failing the test on any error.
func results(t *testing.T, rep *bench.Report) map[string]bench.Result {
	t.Helper()
	byName := map[string]bench.Result{}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Fatalf("%s failed: %s", r.Name, r.Error)
		}
		byName[r.Name] = r
		t.Logf("%-24s p50 %.3f ms p99 %.3f ms n=%d cpu %.2f%% rss %.0f MB %s", r.Name, r.P50ms, r.P99ms, r.Ops, r.CPUPct, r.RSSMB, r.Note)
	}
	return byName
}
