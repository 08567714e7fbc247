package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestLimitEventsReadable: the events pane words the limits' events (an
// operator's limit_set and limit_removed on a whole account, a run's
// limit_refused) and names the slot a grant of a limited account took,
// with the event's untrusted texts cleaned.
func TestLimitEventsReadable(t *testing.T) {
	t.Parallel()
	acme := data.Key{Account: "acme"}
	chat := data.Key{Account: "acme", Session: "chat-1"}
	evs := []data.Event{
		{ID: 1, Kind: data.KindLimitSet, At: server.Add(-4 * time.Second), Key: acme, Actor: "ops\x1b[31m", Reason: "pool deep-research: 3 slots"},
		{ID: 2, Kind: data.KindAcquired, At: server.Add(-3 * time.Second), Key: chat, RunID: run(1), Fence: 4, Holder: "desktop",
			ExpiresAt: server.Add(10 * time.Second), Reason: "slot 2, deep-research slot 1"},
		{ID: 3, Kind: data.KindLimitRefused, At: server.Add(-2 * time.Second), Key: data.Key{Account: "acme", Session: "chat-2"},
			RunID: run(2), Holder: "phone", Reason: "account at its limit"},
		{ID: 4, Kind: data.KindLimitRemoved, At: server.Add(-time.Second), Key: acme, Actor: "ops", Reason: "no limit"},
	}
	m, _ := newModel(t, 160, 40)
	apply(m, syncBatch(nil, nil))
	for i := range evs {
		apply(m, monitor.Batch{Items: []monitor.Item{{Event: &evs[i], At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	}
	s := screen(m)
	for _, want := range []string{
		"limit set      acme        pool deep-research: 3 slots by ops",
		"acquired       acme/chat-1 run " + shortRun(run(1)) + " fence 4 slot 2, deep-research slot 1 · desktop",
		"limit refused  acme/chat-2 run " + shortRun(run(2)) + " refused: account at its limit · phone",
		"limit removed  acme        no limit by ops",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("events pane lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "\x1b[31m") {
		t.Errorf("events pane passed the actor's escape through:\n%q", s)
	}
}
