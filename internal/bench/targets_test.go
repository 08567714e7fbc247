package bench

import (
	"strings"
	"testing"
)

// TestFailedWorkloadKeepsItsTarget: a workload that failed, or completed
// nothing, does not take its targets with it: each comparison that needs
// it reads NOT MET with its target and the error, in the text and the
// JSON; a comparison of workloads that were not run is left out, and the
// others are judged as before.
func TestFailedWorkloadKeepsItsTarget(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Name: "acquire", Ops: 100, P50ms: 1},
		{Name: "upsert", Error: "connection refused"},
		{Name: "cycle", Ops: 100, OpsPerSec: 900},
		{Name: "seed-cycle", Ops: 100, OpsPerSec: 1000},
		{Name: "takeover", Ops: 0},
	}
	got := map[string]Ratio{}
	for _, r := range ratios(results, 0) {
		got[r.Name] = r
	}
	for _, name := range []string{"acquire p50 / plain UPSERT p50", "takeover after a dead holder's expiry p50"} {
		r, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%q is missing: its target vanished with its workload", name)
		case r.Met == nil || *r.Met || r.Error == "" || r.Target == "":
			t.Errorf("%q = %+v, want not met, with its target and the error", name, r)
		}
	}
	if r := got["acquire p50 / plain UPSERT p50"]; !strings.Contains(r.Error, "upsert failed: connection refused") {
		t.Errorf("error %q, want the failed workload and its error", r.Error)
	}
	if r, ok := got["acquire+release cycles/s / the seed's UPSERT+DELETE cycles/s"]; !ok || r.Error != "" || r.Met == nil || !*r.Met {
		t.Errorf("the cycle ratio = %+v, %v; want met (0.9 >= 0.8)", r, ok)
	}
	if _, ok := got["handoff p50, NOTIFY wake-up"]; ok {
		t.Error("a comparison of a workload that was not run is in the report")
	}
	var b strings.Builder
	(&Report{Ratios: ratios(results, 0)}).writeRatios(&b)
	for line := range strings.Lines(b.String()) {
		if strings.HasPrefix(line, "acquire p50 / plain UPSERT p50") &&
			(!strings.Contains(line, "<= 1.5x") || !strings.Contains(line, "NOT MET (ERROR: upsert failed: connection refused)")) {
			t.Errorf("text line %q, want its target and NOT MET with the error", line)
		}
	}
}
