package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
)

// preemptedEvent replaces run 2 (desktop) with run 9 (phone), with text
// that must render inert.
func preemptedEvent(holder, prevHolder, reason string) data.Event {
	return data.Event{ID: 201, Kind: data.KindPreempted, At: server.Add(-time.Second), Key: data.Key{Account: "acme", Session: "chat-9b21"},
		RunID: run(9), PrevRunID: run(2), Fence: 50, PrevFence: 42, Holder: holder, PrevHolder: prevHolder,
		Actor: "ops", Reason: reason, ExpiresAt: server.Add(14 * time.Second), PrevExpiresAt: server.Add(5 * time.Second)}
}

// TestPreemptedEventShows: the events pane and the detail view's history
// name a preempt with both runs, both labels, the login and the reason; the
// detail view shows the holder's attachment and that it may not be
// preempted.
func TestPreemptedEventShows(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 160, 40)
	l := mkLease("acme", "chat-9b21", "phone", run(9), 50, time.Second, time.Second, 15*time.Second)
	l.Attachment, l.NotPreemptible = "stream-7", true
	ev := preemptedEvent("phone", "desktop", "moved to the phone")
	apply(m, syncBatch([]data.Lease{l}, []data.Event{ev}))
	main := screen(m)
	for _, want := range []string{"preempted", "by ops", "desktop→phone", "moved to the phone", shortRun(run(2)) + "→" + shortRun(run(9))} {
		if !strings.Contains(main, want) {
			t.Errorf("events pane lacks %q:\n%s", want, main)
		}
	}
	press(m, "enter")
	m.Update(historyMsg{key: m.detail.key, events: []data.Event{ev}})
	detail := screen(m)
	for _, want := range []string{"attachment", "stream-7", "must not be preempted", "preempted"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail view lacks %q:\n%s", want, detail)
		}
	}
}

// TestHostilePreemptRendersInert: labels, reason and attachment with
// escapes and bidi controls (a forged notification, a foreign row) show
// escaped, in the events pane and the detail view.
func TestHostilePreemptRendersInert(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 160, 40)
	l := mkLease("acme", "chat-9b21", "phone", run(9), 50, time.Second, time.Second, 15*time.Second)
	l.Attachment = "s\x1b]0;pwned\x07\u202eevil"
	ev := preemptedEvent("p\x1b[2J", "d\u202eesk", "bye\r\n\x1b[2K")
	apply(m, syncBatch([]data.Lease{l}, []data.Event{ev}))
	views := map[string]string{"main": m.View().Content}
	press(m, "enter")
	m.Update(historyMsg{key: m.detail.key, events: []data.Event{ev}})
	views["detail"] = m.View().Content
	checkInert(t, views, `p\x1b[2J`)
	if d := ansi.Strip(views["detail"]); !strings.Contains(d, `\x1b]0;pwned`) {
		t.Errorf("detail view does not show the attachment escaped:\n%s", d)
	}
}
