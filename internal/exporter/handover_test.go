package exporter_test

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestAskOutcomesCounted: an ask handed over, one declined and one that
// expired unanswered (its asker asking again past the deadline) are counted
// by outcome in leasetop_handover_asks_total, and as transitions.
func TestAskOutcomesCounted(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	pool := db.Pool(t)
	bin := pgtest.PSQLPath(t)
	p := startExporter(t, db.URL)
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })
	const holder, asker = "'10000000-0000-0000-0000-000000000001'", "'20000000-0000-0000-0000-000000000002'"
	for _, s := range []string{
		`SELECT lease.acquire('h', 'over', ` + holder + `, '1 hour', 'desktop')`,
		`SELECT lease.ask_handover('h', 'over', ` + asker + `, '1 hour', 'phone')`,
		`SELECT lease.hand_over('h', 'over', ` + holder + `, '1 minute')`,
		`SELECT lease.acquire('h', 'no', ` + holder + `, '1 hour', 'desktop')`,
		`SELECT lease.ask_handover('h', 'no', ` + asker + `, '1 hour', 'phone')`,
		`SELECT lease.decline_handover('h', 'no', ` + holder + `)`,
		`SELECT lease.acquire('h', 'late', ` + holder + `, '1 hour', 'desktop')`,
		`SELECT lease.ask_handover('h', 'late', ` + asker + `, '1 millisecond', 'phone')`,
		`SELECT pg_sleep(0.01)`, // the server clock passes the 1 ms ask; nothing is awaited
		`SELECT lease.ask_handover('h', 'late', ` + asker + `, '1 hour', 'phone')`,
	} {
		pgtest.PSQL(t, bin, db.URL, s)
	}
	want := waitCounted(t, p, pool, "the hand-over transitions")
	if want["handover_asked"] != 3 || want["handed_over"] != 1 || want["handover_declined"] != 1 || want["handover_expired"] != 1 {
		t.Fatalf("lease.event kinds = %v, want 3 asks, 1 handed over, 1 declined, 1 expired", want)
	}
	m := p.metrics(t)
	for _, o := range []string{"handed_over", "declined", "expired"} {
		series := `leasetop_handover_asks_total{outcome="` + o + `"}`
		if m[series] != 1 {
			t.Errorf("%s = %g, want 1", series, m[series])
		}
	}
}
