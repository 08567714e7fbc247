package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// The timeline workload is opt-in: TestRunAllWorkloads does not expect it.
// (Added here rather than on optIn's line, which each new opt-in workload
// edits.)
func init() { optIn["timeline"] = true }

// TestTimelineWorkload runs the opt-in timeline workload on a few thousand
// leases (and their history at the same density per session) and checks
// that it reports every figure, consistent with each other, never their
// speed.
func TestTimelineWorkload(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Only: []string{"timeline"}, MonitorLeases: 3000,
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
		t.Logf("%-20s p50 %.3f ms p99 %.3f ms max %.3f ms n=%d cpu %.1f%% rss %.0f MB %s", r.Name, r.P50ms, r.P99ms, r.MaxMs, r.Ops, r.CPUPct, r.RSSMB, r.Note)
	}
	for _, name := range []string{"timeline-main-frame", "timeline-open", "timeline-scrub", "timeline-next", "timeline-frame", "timeline-db"} {
		r, ok := byName[name]
		if !ok || r.Ops == 0 || r.P50ms <= 0 || r.P99ms < r.P50ms || r.MaxMs < r.P99ms {
			t.Errorf("%s = %+v, want ops > 0 and 0 < p50 <= p99 <= max", name, r)
		}
	}
	if r := byName["timeline-open"]; r.Ops != 10 {
		t.Errorf("timeline-open timed %d opens, want 10", r.Ops)
	}
	if r := byName["timeline-db"]; r.Ops != byName["timeline-open"].Ops+byName["timeline-scrub"].Ops+byName["timeline-next"].Ops {
		t.Errorf("timeline-db has %d steps, want one per open and scrub step", r.Ops)
	}
	// A step's reads happen between its key and its frame.
	for _, name := range []string{"timeline-open", "timeline-scrub"} {
		if db, step := byName["timeline-db"].MaxMs, byName[name].MaxMs; db > max(byName["timeline-open"].MaxMs, byName["timeline-scrub"].MaxMs, byName["timeline-next"].MaxMs) {
			t.Errorf("the slowest step's reads took %.3f ms, longer than any step (%s max %.3f ms)", db, name, step)
		}
	}
	if r := byName["timeline-idle"]; r.CPUPct <= 0 || r.RSSMB <= 0 {
		t.Errorf("timeline-idle = %+v, want CPU and resident memory", r)
	}
	verdicts, ratios := 0, 0
	for _, ra := range rep.Ratios {
		if ra.Met != nil {
			verdicts++
		}
		ratios++
		t.Logf("%s = %.2f%s %s", ra.Name, ra.Value, ra.Unit, ra.Target)
	}
	if verdicts != 5 || ratios != 9 {
		t.Errorf("%d ratios, %d with a verdict; want the timeline's 9, 5 of them targets: %+v", ratios, verdicts, rep.Ratios)
	}
	assertCleanedUp(t, db.Conn(t))
}
