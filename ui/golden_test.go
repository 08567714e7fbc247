package ui

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	xansi "github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Golden views: ansi.Strip(View) compared with testdata/TestGolden/*.golden.
// Regenerate with go test ./ui -run TestGolden -update, after reading the
// diff.
func TestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		w, h  int
		cfg   func(*Config)
		setup func(t *testing.T, m *Model, c *fixedClock)
	}{
		{"connecting", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {}},
		{"empty", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(nil, nil))
		}},
		{"loaded", 100, 30, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
		}},
		{"loaded_80x24", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
		}},
		{"expiring_and_expired", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), nil))
			c.Advance(3 * time.Second) // the countdowns move on the server clock
			apply(m, readBatch(c.t))
			m.Update(tickMsg(c.t))
		}},
		{"no_answer", 100, 8, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases()[:1], nil))
			c.Advance(3 * time.Second) // no read answered since: the listener has not noticed yet
			m.Update(tickMsg(c.t))
		}},
		{"events_takeover_and_zombie", 100, 30, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases()[:1], loadedEvents()))
			press(m, "tab", "j", "j", "j")
		}},
		{"detail", 100, 30, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "j", "j") // acme/chat-9b21
			press(m, "enter")
			var hist []data.Event
			for _, ev := range loadedEvents() {
				if ev.Key == (data.Key{Account: "acme", Session: "chat-9b21"}) {
					hist = append([]data.Event{ev}, hist...)
				}
			}
			m.Update(historyMsg{key: m.detail.key, events: hist})
		}},
		{"detail_long_values", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			long := mkLease("globex", strings.Repeat("session-", 12), strings.Repeat("holder ", 10), run(3), 17, time.Hour, time.Second, 15*time.Second)
			apply(m, syncBatch([]data.Lease{long}, nil))
			press(m, "enter")
			m.Update(historyMsg{key: m.detail.key})
		}},
		{"detail_locked", 100, 30, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "enter") // initech/batch-nightly: expired 12 s ago, not taken over
			m.Update(historyMsg{key: m.detail.key})
			m.Update(lockersMsg{key: m.detail.key, lockers: []data.Locker{{PID: 4121, User: "backend", App: "worker-7",
				State: "idle in transaction", InTx: 14 * time.Second, InState: 13500 * time.Millisecond, Visible: true}}})
		}},
		{"help", 100, 40, nil, func(t *testing.T, m *Model, c *fixedClock) { press(m, "?") }},
		{"help_read_only", 100, 40, readOnly, func(t *testing.T, m *Model, c *fixedClock) { press(m, "?") }},
		{"help_small", 60, 20, nil, func(t *testing.T, m *Model, c *fixedClock) { press(m, "?") }},
		{"confirm_dialog", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "j", "j", "x")
		}},
		{"confirm_dialog_changed_hands", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "x") // initech/batch-nightly, expired
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &data.Event{ID: 200, Kind: data.KindTakenOver,
				Key: data.Key{Account: "initech", Session: "batch-nightly"}, RunID: run(9), PrevRunID: run(4),
				Fence: 50, PrevFence: 7, At: server, ExpiresAt: server.Add(15 * time.Second), Holder: "cron@host-b"}, At: base}},
				Conn: data.ListenerState{Status: data.ListenerLive}})
			press(m, "tab", "n", "i", "g", "h", "t", "l", "y", "enter")
		}},
		{"read_only", 80, 24, readOnly, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "x")
		}},
		{"reconnecting", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			c.Advance(2 * time.Second)
			apply(m, monitor.Batch{Conn: data.ListenerState{Status: data.ListenerReconnecting, Attempt: 2,
				Err: errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)"), Since: c.t.Add(-time.Second)}})
		}},
		{"down", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			c.Advance(9 * time.Second)
			apply(m, monitor.Batch{Conn: data.ListenerState{Status: data.ListenerReconnecting, Attempt: 7,
				Err: errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), Since: c.t.Add(-8 * time.Second)}})
		}},
		{"poll_on_standby", 100, 30, readOnly, func(t *testing.T, m *Model, c *fixedClock) {
			b := syncBatch(loadedLeases(), loadedEvents())
			b.Items[0].Sync.Recovery = data.Recovery{Standby: true, LastReplay: server.Add(-400 * time.Millisecond)}
			b.Conn = data.ListenerState{Status: data.ListenerPolling, Since: base, Poll: 250 * time.Millisecond,
				Reason: data.PollReason{Cause: data.PollStandby}}
			apply(m, b)
		}},
		{"poll_through_pooler", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			b := syncBatch(loadedLeases(), loadedEvents())
			b.Conn = data.ListenerState{Status: data.ListenerPolling, Since: base, Poll: 250 * time.Millisecond,
				Reason: data.PollReason{Cause: data.PollNoDelivery, Detail: "3s"}}
			apply(m, b)
		}},
		{"standby_nothing_replayed", 80, 24, readOnly, func(t *testing.T, m *Model, c *fixedClock) {
			b := syncBatch(loadedLeases(), nil)
			b.Items[0].Sync.Recovery = data.Recovery{Standby: true}
			b.Conn = data.ListenerState{Status: data.ListenerPolling, Since: base, Poll: time.Second,
				Reason: data.PollReason{Cause: data.PollStandby}}
			apply(m, b)
		}},
		{"paused", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "space")
			c.Advance(5 * time.Second)
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &data.Event{ID: 300, Kind: data.KindAcquired,
				Key: data.Key{Account: "new", Session: "one"}, RunID: run(10), Fence: 60, At: server.Add(5 * time.Second),
				ExpiresAt: server.Add(20 * time.Second)}, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
			apply(m, readBatch(c.t))
			m.Update(tickMsg(c.t))
		}},
		{"filtered", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "/", "a", "c", "m", "e", "enter")
		}},
		{"filtering", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			press(m, "/", "z", "z")
		}},
		{"sorted_by_holder", 80, 24, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), nil))
			press(m, "s", "s", "s")
		}},
		{"narrow_60x16", 60, 16, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
		}},
		{"narrow_40x10", 40, 10, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
		}},
		{"tiny_32x6", 32, 6, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
		}},
		{"too_small", 20, 4, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
		}},
		{"hostile_text", 100, 30, nil, func(t *testing.T, m *Model, c *fixedClock) {
			apply(m, syncBatch(hostileLeases(), hostileEvents()))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mut []func(*Config)
			if tt.cfg != nil {
				mut = append(mut, tt.cfg)
			}
			m, c := newModel(t, tt.w, tt.h, mut...)
			tt.setup(t, m, c)
			requireGolden(t, m, tt.w, tt.h)
		})
	}
}

// requireGolden compares the model's w x h screen, unstyled, with the
// test's golden file, after checking its frame.
func requireGolden(t *testing.T, m *Model, w, h int) {
	t.Helper()
	out := screen(m)
	checkFrame(t, out, w, h)
	golden.RequireEqual(t, out)
}

func readOnly(c *Config) { c.ReadOnly = true }

// checkFrame: exactly h lines, none wider than w.
func checkFrame(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h && !(w < minWidth || h < minHeight) {
		t.Errorf("view has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > w {
			t.Errorf("line %d is %d runes wide, want <= %d: %q", i, n, w, l)
		}
	}
}

// hostileLeases carry terminal escapes in every untrusted field. The
// schema forbids control characters, but notifications can be forged and
// older or foreign rows exist: the screen must not trust the database.
func hostileLeases() []data.Lease {
	return []data.Lease{
		mkLease("evil\x1b[2J", "s\x1b]0;pwned\x07", "h\x1b[31mred\u009b1;1H\u202eabc", run(1), 1, time.Minute, time.Second, 15*time.Second),
	}
}

func hostileEvents() []data.Event {
	return []data.Event{{ID: 1, Kind: data.KindForceReleased, At: server, Key: data.Key{Account: "evil\x1b[2J", Session: "x"},
		RunID: run(1), Actor: "\x1b[?1049lroot", Reason: "bye\r\n\x1b[2K"}}
}

// sgrOnly matches the only escape sequences the monitor itself emits:
// colours and text attributes.
var sgrOnly = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

func TestHostileTextRendersInert(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 100, 30)
	apply(m, syncBatch(hostileLeases(), hostileEvents()))
	views := map[string]string{"main": m.View().Content}
	press(m, "enter")
	m.Update(historyMsg{key: m.detail.key, events: hostileEvents()})
	views["detail"] = m.View().Content
	press(m, "esc", "x")
	views["dialog"] = m.View().Content
	checkInert(t, views, `evil\x1b[2J`)
}

// checkInert: each view (raw, styled) holds no control character but the
// monitor's own colour codes, and shows visible, the escaped text.
func checkInert(t *testing.T, views map[string]string, visible string) {
	t.Helper()
	for name, raw := range views {
		rest := sgrOnly.ReplaceAllString(raw, "")
		for _, r := range rest {
			if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e') {
				t.Errorf("%s view contains %U outside the monitor's own colour codes", name, r)
			}
		}
		if !strings.Contains(xansi.Strip(raw), visible) {
			t.Errorf("%s view does not show the escape visibly as %s:\n%s", name, visible, xansi.Strip(raw))
		}
	}
}
