package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestExporterWorkload runs the opt-in exporter workload after the monitor's
// on the same few thousand leases and checks that it reports every figure,
// and the exporter's CPU beside the monitor's.
func TestExporterWorkload(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 600 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Only: []string{"monitor", "exporter"}, MonitorLeases: 3000,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	byName := map[string]bench.Result{}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Fatalf("%s failed: %s", r.Name, r.Error)
		}
		byName[r.Name] = r
		t.Logf("%-16s p50 %.3f ms p99 %.3f ms n=%d cpu %.1f%% rss %.0f MB %s", r.Name, r.P50ms, r.P99ms, r.Ops, r.CPUPct, r.RSSMB, r.Note)
	}
	if r := byName["exporter-load"]; r.P50ms <= 0 || r.RSSMB <= 0 {
		t.Errorf("exporter-load = %+v, want a load time and resident memory", r)
	}
	for _, name := range []string{"exporter-idle", "exporter-active"} {
		if r := byName[name]; r.CPUPct <= 0 || r.RSSMB <= 0 || r.Ops == 0 {
			t.Errorf("%s = %+v, want CPU, resident memory and scrapes", name, r)
		}
	}
	if r := byName["exporter-scrape"]; r.Ops == 0 || r.P50ms <= 0 || r.P99ms < r.P50ms {
		t.Errorf("exporter-scrape = %+v, want scrapes timed", r)
	}
	verdicts, sideBySide := 0, false
	for _, ra := range rep.Ratios {
		t.Logf("%s = %.2f%s %s", ra.Name, ra.Value, ra.Unit, ra.Target)
		if ra.Met != nil {
			verdicts++
		}
		sideBySide = sideBySide || (strings.Contains(ra.Name, "monitor CPU at the same load") && ra.Value > 0)
	}
	if verdicts != 6 {
		t.Errorf("%d targets with a verdict, want the monitor's 4 and the exporter's 2", verdicts)
	}
	if !sideBySide {
		t.Error("no ratio of the exporter's CPU to the monitor's")
	}
	assertCleanedUp(t, db.Conn(t))
}
