package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestTimelineSaysWhereACappedReadStopped: a lane whose window holds more
// events than one read returns (historyReadLimit) is read through the store
// up to the cap; from the last event read on, the lane is unknown and says
// it was not read and how to read less, the status line says so, and n
// stops there, instead of drawing the last holder read as holding until now.
func TestTimelineSaysWhereACappedReadStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "busy"}
	sqlAcquire(t, conn, k, "1 hour", "device-now")
	// After the acquire, dated before it: historyReadLimit+500 takeovers of
	// k, one each 5 ms from 5 minutes ago, every one by device-old (bulk
	// rows, as bench's preloadHistory writes them).
	n := historyReadLimit + 500
	var now time.Time
	err := conn.QueryRow(ctx, `
		WITH w AS (
			INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence,
			                         expires_at, prev_expires_at, holder)
			SELECT now() - interval '5 minutes' + j * interval '5 ms', 'taken_over', $1, $2,
			       gen_random_uuid(), gen_random_uuid(), j + 1, j, now() + interval '1 hour',
			       now() - interval '5 minutes' + j * interval '5 ms', 'device-old'
			  FROM generate_series(1, $3::int) j
			RETURNING 1)
		SELECT now() FROM (SELECT count(*) FROM w) c`, k.Account, k.Session, n).Scan(&now)
	if err != nil {
		t.Fatal(err)
	}
	s := db.Store(t)
	m, _ := timelineOnStore(t, s, "t")
	// The last event read is the cap's; the 500 after it (2.5 s) and the
	// acquire are not.
	lastRead := now.Add(-5*time.Minute + time.Duration(historyReadLimit)*5*time.Millisecond)
	after := lastRead.Add(time.Second)
	lanes := m.timelineLanes(m.tlWindow())
	if sp, ok := lanes[0].At(after); !ok || sp.Kind != monitor.SpanUnknown {
		t.Errorf("after the read's cap the lane shows %v (holder %q), want unknown", sp.Kind, sp.Holder)
	}
	if sp, ok := lanes[0].At(lastRead.Add(-time.Second)); !ok || sp.Kind != monitor.SpanHeld || sp.Holder != "device-old" {
		t.Errorf("before the read's cap the lane shows %v (holder %q), want held by device-old", sp.Kind, sp.Holder)
	}
	view := ansi.Strip(m.View().Content)
	if !strings.Contains(view, "not read") || !strings.Contains(view, "zoom in (+)") {
		t.Errorf("the view does not say the history was cut:\n%s", view)
	}
	// The events at the cap's instant are dropped too (others of that
	// instant may not be read): the last one kept is 5 ms before.
	lastKept := lastRead.Add(-5 * time.Millisecond)
	drain(m, m.scrubTo(lastKept.Add(-time.Millisecond)))
	pressDrain(m, "n", "n")
	if !m.tl.cursor.Equal(lastKept) {
		t.Errorf("n, n from just before the last event kept moved the cursor to %v, want it at that event (%v)", m.tl.cursor, lastKept)
	}
	if !strings.Contains(m.status, "not read") {
		t.Errorf("after n at the cap the status says %q, want that the rest is not read", m.status)
	}
}
