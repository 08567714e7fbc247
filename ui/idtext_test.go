package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// lookAlikes are three leases that all read "globex chat-1 phone pid 16663"
// without marks (a Cyrillic а in a session id, a Greek ο in a holder label),
// and their acquisitions.
func lookAlikes() ([]data.Lease, []data.Event) {
	leases := []data.Lease{
		mkLease("globex", "chat-1", "phone pid 16663", run(31), 61, 4*time.Second, time.Second, 10*time.Second),
		mkLease("globex", "ch\u0430t-1", "phone pid 16663", run(32), 62, 3*time.Second, time.Second, 10*time.Second),
		mkLease("globex", "chat-1x", "ph\u03bfne pid 16663", run(33), 63, 2*time.Second, time.Second, 10*time.Second),
	}
	var events []data.Event
	for i, l := range leases {
		events = append(events, data.Event{ID: int64(301 + i), Kind: data.KindAcquired, At: l.AcquiredAt, Key: l.Key,
			RunID: l.RunID, Fence: l.Fence, Holder: l.Holder, ExpiresAt: l.ExpiresAt})
	}
	return leases, events
}

// TestLookAlikeIDsAreMarked: the monitor underlines the runes outside ASCII
// of ids and holder labels, in the table (the selected row too) and the
// events pane, and the detail view spells them out, so "chat-1" and
// "chаt-1" do not look the same; an ASCII id is not marked.
func TestLookAlikeIDsAreMarked(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 120, 30)
	leases, events := lookAlikes()
	apply(m, syncBatch(leases, events))
	view := m.View().Content
	cyrillic, greek := markOn+"\u0430"+markOff, markOn+"\u03bf"+markOff
	if n := strings.Count(view, cyrillic); n < 2 {
		t.Errorf("the Cyrillic а is marked %d times, want in the table and the events pane:\n%q", n, view)
	}
	if n := strings.Count(view, greek); n < 2 {
		t.Errorf("the Greek ο is marked %d times, want in the table and the events pane:\n%q", n, view)
	}
	if n := strings.Count(view, markOn); n != strings.Count(view, cyrillic)+strings.Count(view, greek) {
		t.Errorf("%d marks, want only the two look-alike letters'", n)
	}
	press(m, "g")
	for range len(leases) {
		if l, ok := m.selected(); ok && l.Session == "ch\u0430t-1" {
			break
		}
		press(m, "j")
	}
	if l, _ := m.selected(); l.Session != "ch\u0430t-1" {
		t.Fatalf("cannot select the Cyrillic session; selected %+q", l.Session)
	}
	selectedLine := ""
	for _, line := range strings.Split(m.View().Content, "\n") {
		if strings.Contains(line, "▶") {
			selectedLine = line
			break
		}
	}
	if !strings.Contains(selectedLine, cyrillic) {
		t.Errorf("the selected row does not mark the Cyrillic а: %q", selectedLine)
	}
	press(m, "enter")
	m.Update(historyMsg{key: m.detail.key, events: events[1:2]})
	if s := screen(m); !strings.Contains(s, `non-ASCII: ch\u{430}t-1`) {
		t.Errorf("the detail view does not spell the session id out:\n%s", s)
	}
}

func TestIDTextCutsOutsideTheMark(t *testing.T) {
	t.Parallel()
	got := idText("ch\u0430t-1-with-a-long-tail", 6)
	if want := "ch" + markOn + "\u0430" + markOff + "t-…"; got != want {
		t.Errorf("idText(.., 6) = %q, want %q (the ellipsis unmarked)", got, want)
	}
	if got := idText("chat-1", 0); got != "chat-1" {
		t.Errorf("idText(chat-1) = %q, want it as it is", got)
	}
}
