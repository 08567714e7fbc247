package monitor_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestFeedSlowDeltaCompletes: a delta read (the leases renewed since the
// previous read) that takes longer than ReadTimeout but keeps receiving
// rows is not cut off, as a resync is not (TestFeedSlowResyncCompletes):
// with a fixed total timeout every delta read of many renewals through a
// slow link failed after ReadTimeout, and the renewals never reached the
// screen.
func TestFeedSlowDeltaCompletes(t *testing.T) {
	t.Parallel()
	s, p, db := proxiedDB(t, slowLeases)
	m := startMirror(t, s, monitor.FeedConfig{ReadTimeout: slowTimeout})
	waitFor(t, m, "every lease, at full speed", func(st *monitor.State) bool { return st.Len() == slowLeases })
	// Every lease renewed behind the feed's back (triggers off: no
	// notification), so only the delta reads bring the renewals, slowly.
	conn := db.Conn(t)
	ctx := context.Background()
	var renewedTo time.Time
	for _, q := range []string{`SET session_replication_role = replica`,
		`UPDATE lease.session_lease SET renewed_at = now(), expires_at = now() + interval '2 hours'`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := conn.QueryRow(ctx, `SELECT min(expires_at) FROM lease.session_lease`).Scan(&renewedTo); err != nil {
		t.Fatalf("read the renewals back: %v", err)
	}
	p.Slow(10 * time.Millisecond)
	renewed := func(st *monitor.State) bool {
		all := true
		st.Range(func(l data.Lease) bool {
			all = !l.ExpiresAt.Before(renewedTo)
			return all
		})
		return all && st.Len() == slowLeases
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := m.WaitFor(wctx, renewed); err != nil {
		var h monitor.Health
		m.Read(func(st *monitor.State) { h = st.Health(time.Now()) })
		t.Fatalf("waiting for %d renewals through a slow link: %v (health %+v)", slowLeases, err, h)
	}
}
