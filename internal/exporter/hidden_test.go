package exporter_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestHiddenTakeoverIsCounted: a lease_app login takes over an expired
// lease in a transaction that opts out of the trigger's NOTIFY, keeps it
// open while 1100 other events commit, and names it in a forged
// notification before committing (both ways of hiding at once).
// leasetop_transitions_total{kind="taken_over"} must count it once after
// the commit, listening and polling; counted from the notifications alone it
// never is, and LeasetopExpiredLeasesUnclaimed fires for a held lease.
func TestHiddenTakeoverIsCounted(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"listen", nil},
		{"poll", []string{"--poll", "50ms"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			pool := db.Pool(t)
			p := startExporter(t, db.URL, mode.args...)
			p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool {
				return m["leasetop_resyncs_total"] >= 1
			})
			if _, err := pool.Exec(ctx, `SELECT lease.acquire('acme', 'hidden', gen_random_uuid(), '1 millisecond', 'victim')`); err != nil {
				t.Fatal(err)
			}
			k := data.Key{Account: "acme", Session: "hidden"}
			pgtest.WaitExpired(t, pool, k)
			waitCounted(t, p, pool, "the victim's lease")

			h := pgtest.OpenHiddenTakeover(t, db, k)
			pgtest.BulkEvents(t, db, 1100)
			// A silent acquisition: counted only once the listener's catch-up
			// (or the poller) has read past the bulk.
			pgtest.MarkerEvent(t, db, "silent", true)
			waitCounted(t, p, pool, "the bulk and the silent marker")
			h.Forge(t)
			// Notifications come in commit order: once this one is counted,
			// the forged one was read back and found no row.
			if _, err := pool.Exec(ctx, `SELECT lease.acquire('acme', 'marker', gen_random_uuid(), '1 hour', 'marker')`); err != nil {
				t.Fatal(err)
			}
			waitCounted(t, p, pool, "the marker after the forged notification")
			h.Commit(t)
			got := waitCounted(t, p, pool, "the hidden takeover")
			if got["taken_over"] != 1 {
				t.Fatalf("lease.event has %d takeovers, want 1", got["taken_over"])
			}
		})
	}
}
