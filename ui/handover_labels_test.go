package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// handedOverEvent hands acme/chat-1 from run 2 to run 9 (desktop), naming
// the previous holder's label only if prevHolder is set (a schema that
// records lease.event.prev_holder for hand-overs).
func handedOverEvent(id int64, prevHolder string) data.Event {
	return data.Event{ID: id, Kind: data.KindHandedOver, At: server.Add(-time.Second), Key: data.Key{Account: "acme", Session: "chat-1"},
		RunID: run(9), PrevRunID: run(2), Fence: 7, PrevFence: 5, Holder: "desktop pid 12", PrevHolder: prevHolder,
		ExpiresAt: server.Add(14 * time.Second), PrevExpiresAt: server.Add(5 * time.Second)}
}

// TestHandedOverShowsTheHolders: a "handed over" line names the labels
// old→new, as a "preempted" line does: from the event's
// prev_holder when it records one, else from what the model knows, the
// lease it showed for the run handed over (the events pane) or the grant
// before it in the session's history (the detail view).
func TestHandedOverShowsTheHolders(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, prevHolder, want string
	}{
		{"recorded", "phone pid 11 (recorded)", "phone pid 11 (recorded)→desktop pid 12"},
		{"known to the model", "", "phone pid 11→desktop pid 12"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _ := newModel(t, 160, 40)
			held := mkLease("acme", "chat-1", "phone pid 11", run(2), 5, 10*time.Second, time.Second, 15*time.Second)
			apply(m, syncBatch([]data.Lease{held}, nil))
			ev := handedOverEvent(301, tt.prevHolder)
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}})
			if s := screen(m); !strings.Contains(s, "handed over") || !strings.Contains(s, tt.want) {
				t.Errorf("events pane lacks %q:\n%s", tt.want, s)
			}
			press(m, "enter")
			acquired := data.Event{ID: 300, Kind: data.KindAcquired, At: server.Add(-10 * time.Second), Key: ev.Key, RunID: run(2), Fence: 5,
				Holder: "phone pid 11", ExpiresAt: server.Add(5 * time.Second)}
			m.Update(historyMsg{key: mkey(ev.Key), events: []data.Event{handedOverEvent(301, tt.prevHolder), acquired}})
			if s := screen(m); !strings.Contains(s, tt.want) {
				t.Errorf("detail view's history lacks %q:\n%s", tt.want, s)
			}
		})
	}
}
