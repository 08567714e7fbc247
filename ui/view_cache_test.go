package ui

import (
	"fmt"
	"image/color"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// cacheLeases is n leases of every kind of countdown: tenths (under ten
// seconds left), seconds, minutes, hours, about to expire and expired, with
// labels long enough to be cut and one that needs cleaning.
func cacheLeases(n int) []data.Lease {
	ttls := []time.Duration{3 * time.Second, 15 * time.Second, 90 * time.Second, 2 * time.Hour, 600 * time.Millisecond}
	out := make([]data.Lease, n)
	for i := range out {
		holder := fmt.Sprintf("device-%d", i)
		if i%7 == 3 {
			holder = "evil\x1b[31m-holder-with-a-long-label"
		}
		renewedAgo := time.Duration(i%4) * 700 * time.Millisecond
		if i%9 == 5 {
			renewedAgo = 20 * time.Second // expired 5 to 19.4 s ago
		}
		out[i] = mkLease(fmt.Sprintf("acct-%d", i%3), fmt.Sprintf("session-%03d", i), holder, run(byte(i)), int64(i+1),
			time.Duration(i)*37*time.Second, renewedAgo, ttls[i%len(ttls)])
	}
	return out
}

// TestViewCacheIsInvisible renders the screen after each step with its
// caches, then again from nothing, and wants the same bytes, styling
// included (the golden tests compare stripped text only).
func TestViewCacheIsInvisible(t *testing.T) {
	t.Parallel()
	m, clock := newModel(t, 120, 40)
	tick := func(d time.Duration) func() {
		return func() {
			clock.Advance(d)
			m.Update(tickMsg(clock.t))
		}
	}
	keys := func(k ...string) func() { return func() { press(m, k...) } }
	event := func(ev data.Event) func() {
		return func() {
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: clock.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
		}
	}
	leases := cacheLeases(60)
	steps := []cacheStep{
		{"first picture", func() { apply(m, syncBatch(leases, loadedEvents())) }},
		{"tick 10ms", tick(10 * time.Millisecond)},
		{"tick 200ms", tick(200 * time.Millisecond)},
		{"tick 200ms again", tick(200 * time.Millisecond)},
		{"tick 1s", tick(time.Second)},
		{"tick past expiries", tick(3 * time.Second)},
		{"cursor down", keys("j", "j")},
		{"tick while held", tick(200 * time.Millisecond)},
		{"page down", keys("pgdown")},
		{"takeover of a shown lease", event(data.Event{ID: 500, Kind: data.KindTakenOver, At: server, Key: leases[0].Key,
			RunID: run(200), PrevRunID: leases[0].RunID, Fence: 900, PrevFence: leases[0].Fence, ExpiresAt: server.Add(time.Minute), Holder: "new-holder"})},
		{"release of a shown lease", event(data.Event{ID: 501, Kind: data.KindReleased, At: server, Key: leases[1].Key,
			RunID: leases[1].RunID, Fence: leases[1].Fence})},
		{"tick after events", tick(200 * time.Millisecond)},
		{"renewal delta", func() {
			l := leases[2]
			l.RenewedAt, l.ExpiresAt = server.Add(4*time.Second), server.Add(time.Hour)
			snap := data.Snapshot{Leases: []data.Lease{l}, Clock: data.NewClock(server.Add(4*time.Second), clock.t, clock.t)}
			apply(m, monitor.Batch{Items: []monitor.Item{{Delta: &snap, At: clock.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
		}},
		{"hold ends", tick(4 * time.Second)},
		{"focus events", keys("tab")},
		{"event cursor", keys("j", "j")},
		{"focus back", keys("tab")},
		{"sort", keys("s")},
		{"sort again", keys("s", "s")},
		{"pause", keys("space")},
		{"tick while paused", tick(time.Second)},
		{"event while paused", event(data.Event{ID: 502, Kind: data.KindAcquired, At: server, Key: data.Key{Account: "acct-9", Session: "late"},
			RunID: run(201), Fence: 901, ExpiresAt: server.Add(time.Minute)})},
		{"resume", keys("space")},
		{"filter", keys("/", "0", "0")},
		{"filter applied", keys("enter")},
		{"filter cleared", keys("esc")},
		{"narrow", func() { m.Update(tea.WindowSizeMsg{Width: 60, Height: 20}) }},
		{"tick narrow", tick(200 * time.Millisecond)},
		{"wide", func() { m.Update(tea.WindowSizeMsg{Width: 200, Height: 50}) }},
		{"light background", func() { m.Update(tea.BackgroundColorMsg{Color: color.White}) }},
		{"tick light", tick(200 * time.Millisecond)},
		{"confirm dialog", keys("x")},
		{"dialog closed", keys("esc")},
		{"help", keys("?")},
		{"help closed", keys("?")},
	}
	checkCacheInvisible(t, m, steps)
}

// TestViewCacheIsInvisibleAcrossCountdowns: the same over ticks in which a
// countdown's bar or colour changes while its text does not.
func TestViewCacheIsInvisibleAcrossCountdowns(t *testing.T) {
	t.Parallel()
	m, clock := newModel(t, 120, 40)
	const ttl = 41 * time.Second // a 15-cell TTL column: an 8-cell bar
	leases := []data.Lease{
		// 18.18 s left: at 0.21 s "17s" with 4 cells, at 0.41 s "17s" with 3.
		mkLease("acct", "bar", "dev", run(1), 1, time.Minute, ttl-18180*time.Millisecond, ttl),
		// 20.8 s left: at 0.21 s green, at 0.41 s amber (below half), "20s".
		mkLease("acct", "amber", "dev", run(2), 2, time.Minute, ttl-20800*time.Millisecond, ttl),
		// 10.55 s left: at 0.21 s amber, at 0.41 s red (below a quarter), "10s".
		mkLease("acct", "red", "dev", run(3), 3, time.Minute, ttl-10550*time.Millisecond, ttl),
	}
	tick := func(d time.Duration) func() {
		return func() {
			clock.Advance(d)
			m.Update(tickMsg(clock.t))
		}
	}
	checkCacheInvisible(t, m, []cacheStep{
		{"first picture", func() { apply(m, syncBatch(leases, nil)) }},
		{"0.01 s", tick(10 * time.Millisecond)},
		{"0.21 s", tick(200 * time.Millisecond)},
		{"0.41 s", tick(200 * time.Millisecond)},
		{"0.61 s", tick(200 * time.Millisecond)},
	})
}

type cacheStep struct {
	name string
	do   func()
}

// checkCacheInvisible runs each step, then compares the frame rendered with
// the caches to one rendered without.
func checkCacheInvisible(t *testing.T, m *Model, steps []cacheStep) {
	t.Helper()
	for _, st := range steps {
		st.do()
		got := m.render()
		m.cache.reset()
		want := m.render()
		if got != want {
			t.Fatalf("after %q the cached frame differs from a fresh one:\ngot:\n%q\nwant:\n%q", st.name, firstDiff(got, want), firstDiff(want, got))
		}
	}
}

// firstDiff returns a's line where it first differs from b.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range al {
		if i >= len(bl) || al[i] != bl[i] {
			return fmt.Sprintf("line %d: %s", i, al[i])
		}
	}
	return "(no difference in the first lines; lengths differ)"
}

// TestTickRendersOnlyChangedRows: a tick that changes no countdown's text
// renders no row and no event line again; one that does renders those rows
// only.
func TestTickRendersOnlyChangedRows(t *testing.T) {
	t.Parallel()
	m, clock := newModel(t, 120, 40)
	// Countdowns shown to the second: held for minutes and renewed 30 s ago
	// (their texts change at whole seconds from now), 570.5 s left (its text
	// changes half a second later).
	var leases []data.Lease
	for i := range 10 {
		leases = append(leases, mkLease("acct", fmt.Sprintf("s%02d", i), "dev", run(byte(i)), int64(i+1),
			time.Duration(i+2)*time.Minute, 30*time.Second, 10*time.Minute+500*time.Millisecond))
	}
	apply(m, syncBatch(leases, loadedEvents()))
	m.render()

	tests := []struct {
		name             string
		advance          time.Duration
		wantRows, wantEv int
	}{
		{"within the same second", 300 * time.Millisecond, 0, 0},    // 0.3 s from now
		{"again within it", 150 * time.Millisecond, 0, 0},           // 0.45 s
		{"across a second", 650 * time.Millisecond, len(leases), 0}, // 1.1 s
		{"a tenth later", 100 * time.Millisecond, 0, 0},             // 1.2 s
	}
	for _, tt := range tests {
		rows, evs := m.cache.rowRenders, m.cache.eventRenders
		clock.Advance(tt.advance)
		m.Update(tickMsg(clock.t))
		m.render()
		if got := m.cache.rowRenders - rows; got != tt.wantRows {
			t.Errorf("%s: %d rows rendered, want %d", tt.name, got, tt.wantRows)
		}
		if got := m.cache.eventRenders - evs; got != tt.wantEv {
			t.Errorf("%s: events pane rendered %d times, want %d", tt.name, got, tt.wantEv)
		}
	}
	rows := m.cache.rowRenders
	press(m, "j")
	m.render()
	if got := m.cache.rowRenders - rows; got != 2 {
		t.Errorf("cursor moved: %d rows rendered, want 2 (the old and the new selected row)", got)
	}
}
