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

// TestTimelineOfANewDatabase: on a new database (nothing ever pruned), the
// window reaching back before the first event shows nobody holding the
// lane there, not "history kept from": nothing was removed, and no lease
// exists without its acquire's event. Pruning its oldest event then makes
// the lane say where the history kept starts.
func TestTimelineOfANewDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "first"}
	sqlAcquire(t, conn, k, "1 hour", "device-a")
	var first time.Time
	if err := conn.QueryRow(ctx, `SELECT min(at) FROM lease.event`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	s := db.Store(t)
	m, clock := timelineOnStore(t, s, "t")
	before := first.Add(-5 * time.Minute)
	lanes := m.timelineLanes(m.tlWindow())
	if sp, ok := lanes[0].At(before); !ok || sp.Kind != monitor.SpanNobody {
		t.Errorf("5 minutes before the database's first event the lane shows %v, want nobody", sp.Kind)
	}
	if sp, ok := lanes[0].At(first.Add(time.Millisecond)); !ok || sp.Kind != monitor.SpanHeld || sp.Holder != "device-a" {
		t.Errorf("after the first event the lane shows %v (%q), want held by device-a", sp.Kind, sp.Holder)
	}
	if view := ansi.Strip(m.View().Content); strings.Contains(view, "kept") {
		t.Errorf("a new database's timeline speaks of the history kept:\n%s", view)
	}

	// The oldest event pruned: from the window's start to the next, unknown.
	sqlAcquire(t, conn, data.Key{Account: "acme", Session: "second"}, "1 hour", "device-b")
	if _, err := conn.Exec(ctx, `DELETE FROM lease.event WHERE id = (SELECT min(id) FROM lease.event)`); err != nil {
		t.Fatal(err)
	}
	clock.t = time.Now().Add(time.Minute)         // the window ends after the second acquire
	m.tl.loaded, m.tl.asked = nil, historyQuery{} // read again
	pressDrain(m, "t", "t")
	lanes = m.timelineLanes(m.tlWindow())
	if sp, ok := lanes[0].At(before); !ok || sp.Kind != monitor.SpanUnknown {
		t.Errorf("before the history kept the lane shows %v, want unknown", sp.Kind)
	}
	if view := ansi.Strip(m.View().Content); !strings.Contains(view, "kept from") {
		t.Errorf("a pruned history's timeline does not say where it starts:\n%s", view)
	}
}
