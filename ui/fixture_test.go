package ui

import (
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// base is the fixtures' local "now"; the server clock runs 12 ms ahead.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixedClock is an injectable clock tests move by hand.
type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time          { return c.t }
func (c *fixedClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func run(n byte) uuid.UUID {
	var u uuid.UUID
	for i := range u {
		u[i] = n*0x11 + byte(i)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// server is base on the server's clock.
var server = base.Add(12 * time.Millisecond)

func mkLease(acct, sess, holder string, r uuid.UUID, fence int64, heldFor, renewedAgo, ttl time.Duration) data.Lease {
	return data.Lease{
		Key: data.Key{Account: acct, Session: sess}, RunID: r, Holder: holder, Fence: fence,
		AcquiredAt: server.Add(-heldFor), RenewedAt: server.Add(-renewedAgo), ExpiresAt: server.Add(-renewedAgo + ttl),
	}
}

// loadedLeases: healthy, draining, nearly expired, expired and unclaimed,
// and labels too long for their columns.
func loadedLeases() []data.Lease {
	return []data.Lease{
		mkLease("acme", "chat-7f3a", "device-1", run(1), 41, 3*time.Minute+12*time.Second, 800*time.Millisecond, 15*time.Second),
		mkLease("acme", "chat-9b21", "device-2", run(2), 42, 45*time.Second, 9*time.Second, 15*time.Second),
		mkLease("globex", "support-ticket-000123456789", "device-3 on rack 12, zone eu-west-1b", run(3), 17, 2*time.Hour, 12500*time.Millisecond, 15*time.Second),
		mkLease("initech", "batch-nightly", "cron@host-a", run(4), 7, 10*time.Minute, 27*time.Second, 15*time.Second),
		mkLease("umbrella", "s1", "", run(5), 3, 20*time.Second, 2*time.Second, 30*time.Second),
	}
}

// loadedEvents: oldest first, the way a resync returns them.
func loadedEvents() []data.Event {
	at := func(ago time.Duration) time.Time { return server.Add(-ago) }
	k := func(a, s string) data.Key { return data.Key{Account: a, Session: s} }
	return []data.Event{
		{ID: 101, Kind: data.KindAcquired, At: at(40 * time.Second), Key: k("acme", "chat-9b21"), RunID: run(6), Fence: 40, Holder: "device-6", ExpiresAt: at(25 * time.Second)},
		{ID: 102, Kind: data.KindTakenOver, At: at(30 * time.Second), Key: k("acme", "chat-9b21"), RunID: run(2), PrevRunID: run(6), Fence: 42, PrevFence: 40,
			ExpiresAt: at(15 * time.Second), PrevExpiresAt: at(33200 * time.Millisecond), Holder: "device-2"},
		{ID: 103, Kind: data.KindRenewRejected, At: at(29 * time.Second), Key: k("acme", "chat-9b21"), RunID: run(6), Fence: 42, Holder: "device-2",
			Reason: "held by run " + run(2).String(), Actor: "app"},
		{ID: 104, Kind: data.KindReleased, At: at(20 * time.Second), Key: k("hooli", "s9"), RunID: run(7), Fence: 39},
		{ID: 105, Kind: data.KindForceReleased, At: at(10 * time.Second), Key: k("hooli", "s8"), RunID: run(8), Fence: 38, Actor: "alice", Reason: "device stuck after deploy"},
		{ID: 106, Kind: data.KindAcquired, At: at(5 * time.Second), Key: k("umbrella", "s1"), RunID: run(5), Fence: 3, ExpiresAt: at(-25 * time.Second)},
	}
}

func syncBatch(leases []data.Lease, events []data.Event) monitor.Batch {
	return monitor.Batch{
		Items: []monitor.Item{{Sync: &data.Sync{
			Snapshot: data.Snapshot{Leases: leases, Clock: data.NewClock(server, base.Add(-time.Millisecond), base.Add(time.Millisecond))},
			Events:   events,
		}, At: base}},
		Conn: data.ListenerState{Status: data.ListenerLive, Since: base.Add(-time.Minute)},
	}
}

// readBatch is the feed's periodic read of the leases renewed since the
// last one (none here) at local time at: it proves the connection, as the
// feed does every second.
func readBatch(at time.Time) monitor.Batch {
	srv := server.Add(at.Sub(base))
	return monitor.Batch{
		Items: []monitor.Item{{Delta: &data.Snapshot{Clock: data.NewClock(srv, at.Add(-time.Millisecond), at.Add(time.Millisecond))}, At: at}},
		Conn:  data.ListenerState{Status: data.ListenerLive, Since: base.Add(-time.Minute)},
	}
}

// newModel returns a model at size w x h on the fixed clock.
func newModel(t *testing.T, w, h int, mutate ...func(*Config)) (*Model, *fixedClock) {
	t.Helper()
	clock := &fixedClock{t: base}
	cfg := Config{Now: clock.Now, Location: time.UTC, Database: "db.example:5432/app"}
	for _, f := range mutate {
		f(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m, clock
}

// apply feeds a batch as the feed would.
func apply(m *Model, b monitor.Batch) { m.Update(batchMsg{batch: b, ok: true}) }

// press sends key presses by their names ("j", "ctrl+d", "enter", "space").
func press(m *Model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		_, last = m.Update(keyMsg(k))
	}
	return last
}

func keyMsg(k string) tea.KeyPressMsg {
	named := map[string]tea.KeyPressMsg{
		"enter": {Code: tea.KeyEnter}, "esc": {Code: tea.KeyEscape}, "tab": {Code: tea.KeyTab},
		"space": {Code: tea.KeySpace, Text: " "}, "up": {Code: tea.KeyUp}, "down": {Code: tea.KeyDown},
		"pgup": {Code: tea.KeyPgUp}, "pgdown": {Code: tea.KeyPgDown}, "home": {Code: tea.KeyHome},
		"end": {Code: tea.KeyEnd}, "backspace": {Code: tea.KeyBackspace},
	}
	if msg, ok := named[k]; ok {
		return msg
	}
	if rest, ok := strings.CutPrefix(k, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: rune(rest[0]), Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// screen is the view without styling.
func screen(m *Model) string { return ansi.Strip(m.View().Content) }

func keyBinding(k, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(k), key.WithHelp(k, desc))
}
