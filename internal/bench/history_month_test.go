package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// The history-month workload is opt-in (see timeline_test.go for why here).
func init() { optIn["history-month"] = true }

// TestHistoryMonthWorkload runs the opt-in history-month workload at 300
// events a day and checks that it reports every figure: each probe on both
// tables with its pages, the drops and the DELETEs of three days, the
// VACUUM, the sizes, and that the drop rewrote no kept partition; never
// their speed.
func TestHistoryMonthWorkload(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 1, Keys: 1, Duration: 100 * time.Millisecond,
		Only: []string{"history-month"}, MonitorLeases: 300,
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
		t.Logf("%-40s p50 %.3f ms p99 %.3f ms n=%d %s", r.Name, r.P50ms, r.P99ms, r.Ops, r.Note)
	}
	for _, p := range []string{"poll", "catchup", "session", "timeline", "scrub"} {
		for _, table := range []string{"partitioned", "plain"} {
			r, ok := byName["history-month-"+p+"-"+table]
			if !ok || r.Ops != 200 || r.P50ms <= 0 || !strings.Contains(r.Note, " pages, planned in ") {
				t.Errorf("history-month-%s-%s = %+v, want 200 timed reads and their pages", p, table, r)
			}
		}
	}
	for name, ops := range map[string]uint64{"history-month-drop-day": 3, "history-month-delete-day": 3, "history-month-vacuum": 1} {
		if r := byName[name]; r.Ops != ops || !strings.Contains(r.Note, "MiB") {
			t.Errorf("%s = %+v, want %d timed and the sizes", name, r, ops)
		}
	}
	if note := byName["history-month-drop-day"].Note; !strings.Contains(note, "nothing rewritten") {
		t.Errorf("history-month-drop-day note %q, want the kept partitions unchanged", note)
	}
	assertCleanedUp(t, db.Conn(t))
}
