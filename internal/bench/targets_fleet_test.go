package bench

import (
	"strings"
	"testing"
)

// TestFleetTargets: at --monitor-leases 1000000 the monitor's and the
// exporter's figures are judged against the targets for a million
// leases (first picture 3 s, 300 MB at 1000 transitions/s, idle CPU 3 %,
// frame 5 ms, sort and filter answers 100 ms, scrape p99 100 ms), each
// once; below it, against the 100,000-lease targets, as before.
func TestFleetTargets(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Name: "monitor-load", Ops: 1, P50ms: 2900, P99ms: 2900},
		{Name: "monitor-idle", Ops: 1, CPUPct: 2.5, RSSMB: 180},
		{Name: "monitor-active", Ops: 1, CPUPct: 40, RSSMB: 290},
		{Name: "monitor-frame", Ops: 100, P50ms: 0.2, P99ms: 1},
		{Name: "monitor-sort", Ops: 4, P50ms: 30, P99ms: 50},
		{Name: "monitor-filter", Ops: 10, P50ms: 30, P99ms: 120},
		{Name: "exporter-scrape", Ops: 50, P50ms: 10, P99ms: 60},
		{Name: "exporter-active", Ops: 1, CPUPct: 10, RSSMB: 310},
	}
	met := func(leases int) map[string]bool {
		out := map[string]bool{}
		for _, r := range ratios(results, leases) {
			if r.Met != nil {
				if _, twice := out[r.Name]; twice {
					t.Errorf("at %d leases %q is judged twice", leases, r.Name)
				}
				out[r.Name] = *r.Met
			}
		}
		return out
	}
	million := met(1_000_000)
	want := map[string]bool{
		"1,000,000 leases: monitor first picture":                            true,
		"1,000,000 leases: monitor resident memory, 1000 transitions/s":      true,
		"1,000,000 leases: monitor CPU while nothing changes, % of one core": true,
		"1,000,000 leases: monitor frame render p50":                         true,
		"1,000,000 leases: monitor sort key answer p99":                      true,
		"1,000,000 leases: monitor filter key answer p99":                    false,
		"1,000,000 leases: exporter scrape p99, 1000 transitions/s":          true,
		"1,000,000 leases: exporter resident memory, 1000 transitions/s":     false,
	}
	for name, w := range want {
		got, ok := million[name]
		if !ok {
			t.Errorf("at 1,000,000 leases no verdict on %q; verdicts %v", name, million)
			continue
		}
		if got != w {
			t.Errorf("at 1,000,000 leases %q met = %t, want %t", name, got, w)
		}
	}
	for name := range million {
		if _, ok := want[name]; !ok {
			t.Errorf("at 1,000,000 leases a verdict on %q: a 100,000-lease target left in", name)
		}
	}
	for name := range met(100_000) {
		if strings.Contains(name, "1,000,000") {
			t.Errorf("at 100,000 leases a verdict on %q", name)
		}
	}
	if _, ok := met(100_000)["monitor snapshot load"]; !ok {
		t.Error("at 100,000 leases no verdict on the 100,000-lease snapshot load")
	}
}
