package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// manyLeases returns n leases acct/s00..s(n-1), expiring in key order.
func manyLeases(n int) []data.Lease {
	out := make([]data.Lease, n)
	for i := range n {
		out[i] = mkLease("acct", fmt.Sprintf("s%02d", i), "dev", run(byte(i)), int64(i+1), time.Minute, 0, time.Duration(10+i)*time.Second)
	}
	return out
}

func selectedKey(t *testing.T, m *Model) data.Key {
	t.Helper()
	l, ok := m.selected()
	if !ok {
		t.Fatal("no row selected")
	}
	return l.Key
}

func sess(i int) data.Key { return data.Key{Account: "acct", Session: fmt.Sprintf("s%02d", i)} }

func TestNavigationKeys(t *testing.T) {
	t.Parallel()
	// 80x24: 14 table rows visible.
	tests := []struct {
		keys     []string
		want     int // selected session index
		wantOff  int // first visible row
		wantLine int // the selected row's line on screen (from the first table row)
	}{
		{nil, 0, 0, 0},
		{[]string{"j"}, 1, 0, 1},
		{[]string{"down", "down"}, 2, 0, 2},
		{[]string{"j", "k"}, 0, 0, 0},
		{[]string{"j", "up"}, 0, 0, 0},
		{[]string{"k"}, 0, 0, 0},
		{[]string{"G"}, 39, 26, 13},
		{[]string{"end"}, 39, 26, 13},
		{[]string{"G", "g"}, 0, 0, 0},
		{[]string{"G", "home"}, 0, 0, 0},
		{[]string{"pgdown"}, 14, 1, 13},
		{[]string{"pgdown", "pgdown", "pgup"}, 14, 14, 0},
		{[]string{"pgup"}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.keys, ","), func(t *testing.T) {
			m, _ := newModel(t, 80, 24)
			apply(m, syncBatch(manyLeases(40), nil))
			if got := m.layout().tableRows; got != 14 {
				t.Fatalf("table rows = %d, want 14", got)
			}
			press(m, tt.keys...)
			if got := selectedKey(t, m); got != sess(tt.want) {
				t.Errorf("selected = %v, want %v", got, sess(tt.want))
			}
			if m.off != tt.wantOff || m.cur-m.off != tt.wantLine {
				t.Errorf("offset, line = %d, %d, want %d, %d", m.off, m.cur-m.off, tt.wantOff, tt.wantLine)
			}
			if !regexp.MustCompile(`▶ acct +` + sess(tt.want).Session + ` `).MatchString(screen(m)) {
				t.Errorf("screen does not mark %v as selected:\n%s", sess(tt.want), screen(m))
			}
		})
	}
}

func TestSelectionKeptAcrossResortAndInserts(t *testing.T) {
	t.Parallel()
	m, c := newModel(t, 80, 24)
	apply(m, syncBatch(manyLeases(20), nil))
	press(m, "j", "j", "j", "j", "j") // s05, line 5
	want := sess(5)

	// Live inserts that sort above it (sooner expiry).
	for i := range 3 {
		ev := data.Event{ID: int64(100 + i), Kind: data.KindAcquired, Key: data.Key{Account: "aaa", Session: fmt.Sprint(i)},
			RunID: run(byte(50 + i)), Fence: int64(100 + i), At: server, ExpiresAt: server.Add(time.Second)}
		apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	}
	if got := selectedKey(t, m); got != want {
		t.Fatalf("after inserts selected = %v, want %v", got, want)
	}
	if got := m.cur - m.off; got != 5 {
		t.Errorf("after inserts the selected row moved to screen line %d, want it to stay on 5", got)
	}

	// Every re-sort keeps the session selected.
	for range m.sortModes() {
		press(m, "s")
		if got := selectedKey(t, m); got != want {
			t.Fatalf("sorted by %v: selected = %v, want %v", m.sortBy, got, want)
		}
	}

	// A renewal (delta read) that moves it to the bottom of the TTL sort.
	l, _ := m.state.Lease(want)
	l.RenewedAt, l.ExpiresAt = server, server.Add(time.Hour)
	apply(m, monitor.Batch{Items: []monitor.Item{{Delta: &data.Snapshot{Leases: []data.Lease{l}}, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	if got := selectedKey(t, m); got != want || m.cur != len(m.rows)-1 {
		t.Errorf("after renewal selected = %v at %d, want %v at the last row %d", got, m.cur, want, len(m.rows)-1)
	}

	// Released: the cursor stays at its position, on the next session.
	rel := data.Event{ID: 200, Kind: data.KindReleased, Key: want, RunID: l.RunID}
	pos := m.cur
	apply(m, monitor.Batch{Items: []monitor.Item{{Event: &rel, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	if _, ok := m.selected(); !ok || m.cur != min(pos, len(m.rows)-1) {
		t.Errorf("after release cursor = %d, want %d", m.cur, min(pos, len(m.rows)-1))
	}
}

func TestFilterKeys(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 80, 24)
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	press(m, "/", "A", "C", "M")
	if !m.filtering || m.filter != "ACM" || len(m.rows) != 2 {
		t.Fatalf("filtering %v filter %q rows %d, want true ACM 2 (case-insensitive, live)", m.filtering, m.filter, len(m.rows))
	}
	press(m, "q") // types, does not quit
	if m.filter != "ACMq" || len(m.rows) != 0 {
		t.Errorf("filter %q rows %d, want ACMq 0", m.filter, len(m.rows))
	}
	press(m, "backspace", "enter")
	if m.filtering || m.filter != "ACM" || len(m.rows) != 2 {
		t.Errorf("after enter: filtering %v filter %q rows %d, want false ACM 2", m.filtering, m.filter, len(m.rows))
	}
	press(m, "esc")
	if m.filter != "" || len(m.rows) != 5 {
		t.Errorf("after esc: filter %q rows %d, want none and 5", m.filter, len(m.rows))
	}
	// By holder and by run id.
	for _, f := range []string{"cron@", run(3).String()[:13]} {
		press(m, "/")
		press(m, strings.Split(f, "")...)
		press(m, "enter")
		if len(m.rows) != 1 {
			t.Errorf("filter %q: rows %d, want 1", f, len(m.rows))
		}
		press(m, "/", "esc")
		if m.filter != "" || m.filtering {
			t.Errorf("esc while filtering: filter %q filtering %v, want cleared", m.filter, m.filtering)
		}
	}
	// ctrl+c quits even while typing.
	press(m, "/")
	if cmd := press(m, "ctrl+c"); !isQuit(cmd) {
		t.Error("ctrl+c while filtering does not quit")
	}
}

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

func TestSortKeyCyclesWithIndicator(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 100, 30)
	apply(m, syncBatch(loadedLeases(), nil))
	tests := []struct {
		mode   sortMode
		header string
		first  data.Key
	}{
		{sortAccount, "ACCOUNT▲", data.Key{Account: "acme", Session: "chat-7f3a"}},
		{sortHeld, "HELD▼", data.Key{Account: "globex", Session: "support-ticket-000123456789"}},
		{sortHolder, "HOLDER▲", data.Key{Account: "umbrella", Session: "s1"}},
		{sortTTL, "TTL▲", data.Key{Account: "initech", Session: "batch-nightly"}},
	}
	for _, tt := range tests {
		press(m, "s")
		if first, _ := m.rowKey(0); m.sortBy != tt.mode || first.Key != tt.first {
			t.Errorf("sort %v first %v, want %v first %v", m.sortBy, first, tt.mode, tt.first)
		}
		if out := screen(m); !strings.Contains(out, tt.header) || !strings.Contains(out, "sort "+tt.mode.String()) {
			t.Errorf("sort %v: header lacks %q or the sort label", tt.mode, tt.header)
		}
	}
}

func TestPauseFreezesScreenButNotData(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"space", "p"} {
		t.Run(k, func(t *testing.T) {
			m, c := newModel(t, 80, 24)
			apply(m, syncBatch(loadedLeases(), nil))
			before := screen(m)
			press(m, k)
			if m.frozen == nil {
				t.Fatal("not paused")
			}
			ev := data.Event{ID: 9, Kind: data.KindAcquired, Key: data.Key{Account: "aaa", Session: "new"}, RunID: run(9), Fence: 99, At: server, ExpiresAt: server.Add(time.Second)}
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
			c.Advance(2 * time.Second)
			m.Update(tickMsg(c.t))
			if _, ok := m.state.Lease(ev.Key); !ok {
				t.Error("the live state missed an event while paused")
			}
			after := screen(m)
			if len(m.rows) != 5 || strings.Contains(after, "aaa") {
				t.Errorf("the paused screen changed: %d rows", len(m.rows))
			}
			if !strings.Contains(after, "PAUSED +1 events") {
				t.Errorf("no loud PAUSED badge:\n%s", after)
			}
			if tableOf(before) != tableOf(after) {
				t.Errorf("countdowns moved while paused:\n%s\n---\n%s", tableOf(before), tableOf(after))
			}
			press(m, k)
			if m.frozen != nil || len(m.rows) != 6 || strings.Contains(screen(m), "PAUSED") {
				t.Errorf("after resuming: frozen %v rows %d, want live with 6 rows", m.frozen != nil, len(m.rows))
			}
		})
	}
}

// tableOf returns the table's lines of a screen.
func tableOf(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[3:8], "\n")
}

func TestFocusAndEventsPane(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 100, 30)
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	press(m, "tab")
	if m.focus != focusEvents {
		t.Fatal("tab did not focus the events pane")
	}
	press(m, "j", "j", "j") // newest first: 106, 105, 104, 103
	if ev, _ := m.selectedEvent(); ev.ID != 103 {
		t.Errorf("selected event %d, want 103", ev.ID)
	}
	wantRow := selectedKey(t, m)
	// A new event arrives on top: the selection stays on event 103.
	ev := data.Event{ID: 107, Kind: data.KindReleased, Key: data.Key{Account: "x", Session: "y"}, RunID: run(1), At: server}
	apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	if got, _ := m.selectedEvent(); got.ID != 103 {
		t.Errorf("after a new event selected %d, want 103", got.ID)
	}
	press(m, "enter")
	if m.mode != modeDetail || m.detail.key.Key != (data.Key{Account: "acme", Session: "chat-9b21"}) {
		t.Errorf("enter on an event: mode %v key %v, want the event's session", m.mode, m.detail)
	}
	press(m, "esc", "tab")
	if m.focus != focusTable || selectedKey(t, m) != wantRow {
		t.Errorf("tab back: focus %v selected %v, want table and %v", m.focus, selectedKey(t, m), wantRow)
	}
}

func TestDetailAndHelpKeys(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 100, 30, func(c *Config) {
		c.Source.HistoryFunc = func(monitor.Key) ([]data.Event, error) { return nil, nil }
	})
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	if cmd := press(m, "enter"); m.mode != modeDetail || cmd == nil {
		t.Fatalf("enter: mode %v cmd %v, want detail and a history command", m.mode, cmd)
	}
	if !strings.Contains(screen(m), "loading…") {
		t.Error("detail does not say it is loading the history")
	}
	press(m, "esc")
	if m.mode != modeMain || m.detail != nil {
		t.Errorf("esc: mode %v, want main", m.mode)
	}
	press(m, "?")
	if m.mode != modeHelp || !strings.Contains(screen(m), "force-release the selected lease") {
		t.Errorf("?: mode %v, want help listing the keys", m.mode)
	}
	press(m, "?")
	if m.mode != modeMain {
		t.Errorf("? again: mode %v, want main", m.mode)
	}
	press(m, "?", "esc")
	if m.mode != modeMain {
		t.Errorf("esc in help: mode %v, want main", m.mode)
	}
}

func TestQuitKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"q", "ctrl+c"} {
		for _, mode := range []string{"main", "help", "detail"} {
			m, _ := newModel(t, 80, 24)
			apply(m, syncBatch(loadedLeases(), nil))
			switch mode {
			case "help":
				press(m, "?")
			case "detail":
				press(m, "enter")
			}
			if cmd := press(m, k); !isQuit(cmd) {
				t.Errorf("%s in %s does not quit", k, mode)
			}
		}
	}
}

func TestResyncKey(t *testing.T) {
	t.Parallel()
	asked := 0
	m, c := newModel(t, 80, 24, func(cfg *Config) { cfg.Source.ResyncFunc = func() { asked++ } })
	apply(m, syncBatch(loadedLeases(), nil))
	press(m, "r")
	if asked != 1 || !strings.Contains(screen(m), "resyncing…") {
		t.Fatalf("r: asked %d times, screen:\n%s", asked, screen(m))
	}
	c.Advance(time.Second)
	apply(m, syncBatch(loadedLeases()[:2], nil))
	if !strings.Contains(screen(m), "resynced: 2 leases") {
		t.Errorf("no resynced status:\n%s", screen(m))
	}
}

func TestConfirmDialogKeys(t *testing.T) {
	t.Parallel()
	target := loadedLeases()[2] // globex, second row in TTL order
	tests := []struct {
		name        string
		open        string
		keys        []string
		wantRelease bool
		wantReason  string
		wantStatus  string
	}{
		{"y releases", "x", []string{"y"}, true, "", "releasing globex/support-ticket-"},
		{"ctrl+d opens, Y releases", "ctrl+d", []string{"Y"}, true, "", "releasing"},
		{"n cancels", "x", []string{"n"}, false, "", "force release cancelled"},
		{"N cancels", "x", []string{"N"}, false, "", "force release cancelled"},
		{"esc cancels", "x", []string{"esc"}, false, "", "force release cancelled"},
		{"enter is the default No", "x", []string{"enter"}, false, "", "force release cancelled"},
		{"other keys do nothing", "x", []string{"j", "x", "q", "enter"}, false, "", "force release cancelled"},
		{"reason then y", "x", []string{"tab", "s", "t", "u", "c", "k", " ", "y", "enter", "y"}, true, "stuck y", "releasing"},
		{"esc while typing cancels", "x", []string{"tab", "a", "esc"}, false, "", "force release cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newModel(t, 80, 24)
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "j", tt.open)
			if m.dialog == nil {
				t.Fatal("the dialog did not open")
			}
			out := screen(m)
			for _, want := range []string{"globex", "support-ticket", "device-3 on rack 12", target.RunID.String(), "2.5s", "(y/N)"} {
				if !strings.Contains(out, want) {
					t.Errorf("dialog does not show %q:\n%s", want, out)
				}
			}
			cmd := press(m, tt.keys...)
			if m.dialog != nil {
				t.Fatalf("dialog still open after %v", tt.keys)
			}
			if tt.wantRelease {
				if m.inflight == nil || m.inflight.key.Key != target.Key || m.inflight.run != target.RunID || m.inflight.reason != tt.wantReason {
					t.Errorf("release request = %+v, want %v run %v reason %q", m.inflight, target.Key, target.RunID, tt.wantReason)
				}
				if cmd == nil {
					t.Error("confirming returned no command")
				}
			} else if m.inflight != nil {
				t.Errorf("release requested: %+v", m.inflight)
			}
			if !strings.Contains(m.status, tt.wantStatus) {
				t.Errorf("status %q, want %q", m.status, tt.wantStatus)
			}
		})
	}
}

// TestConfirmUsesTheShownRun: a takeover while the dialog is open changes
// nothing about which run the release names.
func TestConfirmUsesTheShownRun(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 80, 24)
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	press(m, "x") // initech, expired, run 4
	shown := m.dialog.lease
	ev := data.Event{ID: 200, Kind: data.KindTakenOver, Key: shown.Key, RunID: run(9), PrevRunID: shown.RunID,
		Fence: 50, PrevFence: shown.Fence, At: server, ExpiresAt: server.Add(time.Minute)}
	apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	if !strings.Contains(screen(m), "now held by run "+shortRun(run(9))) {
		t.Errorf("the dialog does not warn about the takeover:\n%s", screen(m))
	}
	press(m, "y")
	if m.inflight == nil || m.inflight.run != shown.RunID {
		t.Fatalf("release request %+v, want the shown run %v", m.inflight, shown.RunID)
	}
	// The database answers: nothing released, now held by run 9.
	now, _ := m.state.Lease(shown.Key)
	m.Update(releaseMsg{req: *m.inflight, result: ReleaseResult{Now: now, Held: true}})
	if want := "nothing released: initech/batch-nightly changed hands (now held by run " + shortRun(run(9)); !strings.Contains(m.status, want) {
		t.Errorf("status %q, want %q", m.status, want)
	}
}

func TestReleaseOutcomeStatus(t *testing.T) {
	t.Parallel()
	req := releaseReq{key: mkey(data.Key{Account: "a", Session: "s"}), run: run(1), holder: "dev"}
	tests := []struct {
		msg  releaseMsg
		want string
	}{
		{releaseMsg{req: req, result: ReleaseResult{Released: true}}, "force released a/s (run " + shortRun(run(1)) + ", holder dev)"},
		{releaseMsg{req: req}, "nothing released: the lease on a/s had already ended"},
		{releaseMsg{req: req, err: fmt.Errorf("force release a/s: %w", fmt.Errorf("permission denied\nfor function force_release"))}, "failed: force release a/s: permission denied for function force_release"},
	}
	for _, tt := range tests {
		m, _ := newModel(t, 80, 24)
		m.Update(tt.msg)
		if !strings.Contains(m.status, tt.want) {
			t.Errorf("status %q, want %q", m.status, tt.want)
		}
	}
}

func TestReadOnlyRefusesRelease(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"x", "ctrl+d"} {
		m, _ := newModel(t, 80, 24, readOnly)
		apply(m, syncBatch(loadedLeases(), loadedEvents()))
		if cmd := press(m, k); cmd != nil || m.dialog != nil || m.inflight != nil {
			t.Errorf("%s in read-only: dialog %v cmd %v, want nothing", k, m.dialog != nil, cmd != nil)
		}
		if !strings.Contains(m.status, "read-only mode: "+k) {
			t.Errorf("%s: status %q, want a read-only explanation", k, m.status)
		}
		// Nor from the detail view.
		press(m, "enter", k)
		if m.dialog != nil {
			t.Errorf("%s in the read-only detail view opened the dialog", k)
		}
		press(m, "esc")
		if strings.Contains(screen(m), "x release") {
			t.Error("read-only hints still offer release")
		}
	}
}

func TestExtraActions(t *testing.T) {
	t.Parallel()
	var got []data.Key
	act := Action{
		Binding: keyBinding("K", "kill the device"),
		RunFunc: func(sel data.Lease, ok bool) (string, error) {
			got = append(got, sel.Key)
			return "killed " + sel.Session, nil
		},
		Destructive: true,
	}
	m, _ := newModel(t, 80, 24, func(c *Config) { c.Actions = []Action{act} })
	apply(m, syncBatch(loadedLeases(), nil))
	cmd := press(m, "K")
	if cmd == nil {
		t.Fatal("K returned no command")
	}
	m.Update(cmd())
	if len(got) != 1 || got[0] != loadedLeases()[3].Key || !strings.Contains(m.status, "killed batch-nightly") {
		t.Errorf("action ran on %v, status %q", got, m.status)
	}
	ro, _ := newModel(t, 80, 24, func(c *Config) { c.Actions = []Action{act}; c.ReadOnly = true })
	apply(ro, syncBatch(loadedLeases(), nil))
	if cmd := press(ro, "K"); cmd != nil || !strings.Contains(ro.status, "read-only mode: K") {
		t.Errorf("destructive action in read-only: cmd %v status %q", cmd != nil, ro.status)
	}
}

// TestActionKeyClash: New refuses an action whose key the key map already
// binds, so a program that embeds the model meets the clash where Run would.
func TestActionKeyClash(t *testing.T) {
	t.Parallel()
	act := Action{Binding: keyBinding("x", "kill the device")}
	_, err := New(Config{Actions: []Action{act}})
	if err == nil || !strings.Contains(err.Error(), `"x"`) || !strings.Contains(err.Error(), "release") {
		t.Fatalf("New with an action on x: err = %v, want a clash with release", err)
	}
	if _, err := New(Config{Actions: []Action{{Binding: keyBinding("K", "kill")}}}); err != nil {
		t.Fatalf("New with an action on a free key: err = %v", err)
	}
}

func TestCountdownTicks(t *testing.T) {
	t.Parallel()
	m, c := newModel(t, 80, 24)
	apply(m, syncBatch(loadedLeases()[:1], nil)) // 14.2 s left
	if !strings.Contains(screen(m), "14s") {
		t.Fatalf("screen:\n%s", screen(m))
	}
	c.Advance(5 * time.Second)
	if cmd := m.onTick(); cmd == nil {
		t.Error("the tick was not re-armed")
	}
	if out := screen(m); !strings.Contains(out, " 9.2s") {
		t.Errorf("after 5 s the countdown does not read 9.2s:\n%s", out)
	}
	c.Advance(10 * time.Second)
	m.onTick()
	if out := screen(m); !strings.Contains(out, "expired <1s ago") {
		t.Errorf("after 15 s the lease is not shown as expired:\n%s", out)
	}
}

func TestResizeKeepsSelectionVisible(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 100, 40)
	apply(m, syncBatch(manyLeases(40), nil))
	press(m, "G")
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 12})
	if m.cur < m.off || m.cur >= m.off+m.layout().tableRows {
		t.Errorf("after shrinking, cursor %d outside the visible rows %d..%d", m.cur, m.off, m.off+m.layout().tableRows)
	}
	checkFrame(t, screen(m), 60, 12)
}

// TestNavigationHoldsTheOrder: after a navigation key the rows keep their
// order for sortHold, so renewals do not shuffle them under the cursor;
// then they sort again, and the selection stays on its session.
func TestNavigationHoldsTheOrder(t *testing.T) {
	t.Parallel()
	m, c := newModel(t, 80, 24)
	apply(m, syncBatch(manyLeases(5), nil)) // TTL order s00..s04
	press(m, "j")                           // s01, holds the order
	renewed, _ := m.state.Lease(sess(0))
	renewed.RenewedAt, renewed.ExpiresAt = server, server.Add(time.Hour)
	apply(m, monitor.Batch{Items: []monitor.Item{{Delta: &data.Snapshot{Leases: []data.Lease{renewed}}, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	if rowKeyAt(m, 0) != sess(0) || selectedKey(t, m) != sess(1) || m.cur != 1 {
		t.Fatalf("while held: first row %v, selected %v at %d; want s00 first and s01 at 1", rowKeyAt(m, 0), selectedKey(t, m), m.cur)
	}
	c.Advance(sortHold)
	m.onTick()
	if rowKeyAt(m, len(m.rows)-1) != sess(0) || selectedKey(t, m) != sess(1) || m.cur != 0 {
		t.Errorf("after the hold: last row %v, selected %v at %d; want s00 last and s01 at 0", rowKeyAt(m, len(m.rows)-1), selectedKey(t, m), m.cur)
	}
}

// TestBigTablesCoalesceRebuilds: above bigTable leases a batch's changes
// are shown on the next tick, so a busy fleet sorts the table at most once
// per tick; small tables show them at once.
func TestBigTablesCoalesceRebuilds(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, bigTable + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m, c := newModel(t, 80, 24)
			leases := make([]data.Lease, n)
			for i := range leases {
				leases[i] = mkLease("acct", fmt.Sprintf("s%05d", i), "dev", run(byte(i)), int64(i+1), time.Minute, 0, time.Minute)
			}
			apply(m, syncBatch(leases, nil))
			ev := data.Event{ID: 1, Kind: data.KindAcquired, Key: data.Key{Account: "aaa", Session: "new"}, RunID: run(1),
				Fence: 1 << 40, At: server, ExpiresAt: server.Add(time.Second)}
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
			shownAtOnce := len(m.rows) == n+1
			if want := n <= bigTable; shownAtOnce != want {
				t.Errorf("new row shown at once = %v, want %v", shownAtOnce, want)
			}
			c.Advance(m.cfg.Tick)
			m.onTick()
			if len(m.rows) != n+1 || rowKeyAt(m, 0) != ev.Key {
				t.Errorf("after a tick: %d rows, first %v; want %d and the new lease first", len(m.rows), rowKeyAt(m, 0), n+1)
			}
		})
	}
}

// rowKeyAt is the key of the table's row i (the zero key if there is none).
func rowKeyAt(m *Model, i int) data.Key {
	k, _ := m.rowKey(i)
	return k.Key
}
