package ui

import (
	"testing"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestEventsPaneFollowsNewest: with the cursor on the newest event (where it
// starts), new events keep the pane at the top, like tail -f, even after the
// pane has filled; a cursor the user moved down stays on its event (see
// TestFocusAndEventsPane).
func TestEventsPaneFollowsNewest(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 100, 30)
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	for id := int64(107); id < 160; id++ {
		ev := data.Event{ID: id, Kind: data.KindReleased, Key: data.Key{Account: "x", Session: "y"}, RunID: run(1), At: server}
		apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	}
	if got, _ := m.selectedEvent(); got.ID != 159 || m.evOf != 0 {
		t.Fatalf("events cursor on %d at offset %d, want the newest (159) at offset 0", got.ID, m.evOf)
	}
}
