package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// countingHistory is withHistoryAnd counting the reads of the lanes'
// history.
func countingHistory(reads *int, extra []data.Lease) func(*Config) {
	return func(c *Config) {
		withHistoryAnd(time.Time{}, extra)(c)
		read := c.Source.TimelineFunc
		c.Source.TimelineFunc = func(q LanesQuery) (History, error) {
			*reads++
			return read(q)
		}
	}
}

// TestTimelineReadsPerWindowNotPerFrame: opening the timeline reads the
// lanes' history once; frames and ticks read nothing, a new event of a lane
// comes from the feed without a read (and shows), zooming and scrolling
// read again, and esc goes live, then back to the table.
func TestTimelineReadsPerWindowNotPerFrame(t *testing.T) {
	t.Parallel()
	var reads int
	var zeta []data.Lease
	for i := range 20 { // more sessions than lanes: the lanes scroll
		zeta = append(zeta, mkLease("zeta", fmt.Sprintf("s%02d", i), "dev", run(byte(20+i)), int64(100+i), time.Minute, time.Second, time.Hour))
	}
	// A tick of a nanosecond: drain runs the ticks' commands without waiting.
	m, c := newModel(t, 80, 24, countingHistory(&reads, zeta), func(c *Config) { c.Tick = time.Nanosecond })
	apply(m, syncBatch(append(loadedLeases(), zeta...), loadedEvents()))
	pressDrain(m, "t")
	if m.mode != modeTimeline || reads != 1 {
		t.Fatalf("after t: mode %v, %d reads, want the timeline and 1 read", m.mode, reads)
	}
	for range 20 {
		c.Advance(250 * time.Millisecond)
		_, cmd := m.Update(tickMsg(c.t))
		drain(m, cmd)
		_ = m.View()
	}
	if reads != 1 {
		t.Errorf("%d reads after 20 ticks and frames, want 1", reads)
	}
	k := data.Key{Account: "acme", Session: "chat-7f3a"}
	ev := data.Event{ID: 9000, Kind: data.KindForceReleased, At: server.Add(5 * time.Second), Key: k, RunID: run(1), Fence: 41, Actor: "bob"}
	apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	_, cmd := m.Update(tickMsg(c.t))
	drain(m, cmd)
	if s := screen(m); reads != 1 || !strings.Contains(s, "force released") || !laneHas(s, "acme/chat-7f…", "✖") {
		t.Errorf("after a forced release from the feed: %d reads (want 1), screen:\n%s", reads, s)
	}
	pressDrain(m, "-")
	if reads != 2 {
		t.Errorf("%d reads after zooming out, want 2", reads)
	}
	second := m.tl.keys[1]
	pressDrain(m, "j")
	if reads != 3 || m.tl.keys[0] != second {
		t.Errorf("after scrolling the lanes: %d reads (want 3), first lane %v, want %v", reads, m.tl.keys[0], second)
	}
	pressDrain(m, "h")
	if !m.tl.scrubbed || !strings.Contains(screen(m), "as of ") {
		t.Fatalf("h did not scrub:\n%s", screen(m))
	}
	pressDrain(m, "esc")
	if m.tl.scrubbed || m.mode != modeTimeline {
		t.Errorf("esc while scrubbed: scrubbed %v mode %v, want live on the timeline", m.tl.scrubbed, m.mode)
	}
	pressDrain(m, "esc")
	if m.mode != modeMain {
		t.Errorf("esc while live: mode %v, want the table", m.mode)
	}
}

// laneHas reports whether the lane whose line starts with label holds want.
func laneHas(screen, label, want string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, label) {
			return strings.Contains(l, want)
		}
	}
	return false
}

// TestTimelineHostileTextRendersInert: labels, ids and reasons with
// terminal escapes draw inert in the lanes, the held-by column and the
// events pane.
func TestTimelineHostileTextRendersInert(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 100, 30, func(c *Config) {
		c.Source.TimelineFunc = func(LanesQuery) (History, error) {
			ev := hostileEvents()[0]
			acq := data.Event{ID: 0, Kind: data.KindAcquired, At: server.Add(-time.Minute), Key: hostileLeases()[0].Key, RunID: run(1), Fence: 1,
				Holder: hostileLeases()[0].Holder, ExpiresAt: server.Add(time.Minute)}
			ev.Key = acq.Key
			ev.At = server.Add(-30 * time.Second)
			return History{Keys: []monitor.Key{mkey(acq.Key)}, Events: []data.Event{acq, ev}}, nil
		}
	})
	apply(m, syncBatch(hostileLeases(), hostileEvents()))
	pressDrain(m, "t")
	checkInert(t, map[string]string{"timeline": m.View().Content}, `evil\x1b[2J`)
}

// TestTimelineDefersTheTable: while the timeline shows, the table (not on
// screen) is not rebuilt for each change; it is when the timeline closes.
func TestTimelineDefersTheTable(t *testing.T) {
	t.Parallel()
	m, c := newModel(t, 80, 24, withHistory(time.Time{}))
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	pressDrain(m, "t")
	k := data.Key{Account: "new", Session: "one"}
	ev := data.Event{ID: 9100, Kind: data.KindAcquired, At: server, Key: k, RunID: run(9), Fence: 99, ExpiresAt: server.Add(time.Minute)}
	apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: c.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	m.Update(tickMsg(c.t))
	if len(m.rows) != len(loadedLeases()) {
		t.Errorf("%d rows while the timeline shows, want the %d it opened on", len(m.rows), len(loadedLeases()))
	}
	pressDrain(m, "t")
	if len(m.rows) != len(loadedLeases())+1 || !strings.Contains(screen(m), "new") {
		t.Errorf("%d rows after closing the timeline, want %d with new/one:\n%s", len(m.rows), len(loadedLeases())+1, screen(m))
	}
}

// TestTimelineResizeFitsTheLanes: a taller terminal shows more lanes (read
// for them), a shorter one fewer.
func TestTimelineResizeFitsTheLanes(t *testing.T) {
	t.Parallel()
	var reads int
	var zeta []data.Lease
	for i := range 40 {
		zeta = append(zeta, mkLease("zeta", fmt.Sprintf("s%02d", i), "dev", run(byte(20+i)), int64(100+i), time.Minute, time.Second, time.Hour))
	}
	m, _ := newModel(t, 80, 24, countingHistory(&reads, zeta))
	apply(m, syncBatch(append(loadedLeases(), zeta...), loadedEvents()))
	pressDrain(m, "t")
	before := len(m.tl.keys)
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 150, Height: 40})
	drain(m, cmd)
	if len(m.tl.keys) <= before || len(m.tl.keys) != m.tlGeometry().lanes || reads != 2 {
		t.Errorf("after growing: %d lanes (were %d, room for %d), %d reads; want every lane filled, read once more", len(m.tl.keys), before, m.tlGeometry().lanes, reads)
	}
	checkFrame(t, screen(m), 150, 40)
}

// TestTimelineFitsEverySize: live and scrubbed, the timeline fills the
// screen exactly, no line wider than it, down to the smallest size.
func TestTimelineFitsEverySize(t *testing.T) {
	t.Parallel()
	for _, sz := range [][2]int{{30, 5}, {40, 10}, {60, 16}, {80, 24}, {100, 30}, {200, 60}} {
		m, _ := timelineModel(t, sz[0], sz[1], server.Add(-6*time.Minute))
		checkFrame(t, screen(m), sz[0], sz[1])
		pressDrain(m, "N", "N", "[")
		if !m.tl.scrubbed {
			t.Errorf("%dx%d: not scrubbed", sz[0], sz[1])
		}
		checkFrame(t, screen(m), sz[0], sz[1])
	}
}

// TestQuietLanesInABusyFleetReadOnce: lanes with no event of their own,
// while the rest of the fleet keeps the State's recent events full, are not
// read again on each tick (what the feed brings is looked at once, and none
// of it is theirs); once the State drops events not looked at, they are.
func TestQuietLanesInABusyFleetReadOnce(t *testing.T) {
	t.Parallel()
	var reads int
	m, c := newModel(t, 80, 24, func(c *Config) {
		c.Tick = time.Nanosecond
		c.Source.TimelineFunc = func(LanesQuery) (History, error) {
			reads++
			keys := make([]data.Key, 0, len(loadedLeases()))
			for _, l := range loadedLeases() {
				keys = append(keys, l.Key)
			}
			return History{Keys: mkeys(keys)}, nil
		}
	})
	apply(m, syncBatch(loadedLeases(), nil))
	pressDrain(m, "t")
	busy := data.Key{Account: "other", Session: "busy"}
	id := int64(1)
	burst := func(n int) {
		var items []monitor.Item
		for range n {
			id++
			ev := data.Event{ID: id, Kind: data.KindRenewRejected, At: server, Key: busy, RunID: run(1)}
			items = append(items, monitor.Item{Event: &ev, At: c.t})
		}
		apply(m, monitor.Batch{Items: items, Conn: data.ListenerState{Status: data.ListenerLive}})
		_, cmd := m.Update(tickMsg(c.t))
		drain(m, cmd)
	}
	for range 10 {
		burst(100) // the State keeps 500: each tick sees all that came
	}
	if reads != 1 {
		t.Errorf("%d reads after 10 busy ticks, want 1", reads)
	}
	burst(600) // more than the State keeps came between two ticks
	if reads != 2 {
		t.Errorf("%d reads after a burst larger than the State keeps, want 2 (read again)", reads)
	}
}

// TestScrubReadsOwnersOneAtATime: a held ← asks who held what once, then
// once more for where the cursor is when the answer comes, not once per
// step (each is a read of the database).
func TestScrubReadsOwnersOneAtATime(t *testing.T) {
	t.Parallel()
	var asked []time.Time
	m, _ := newModel(t, 80, 24, withHistory(time.Time{}), func(c *Config) {
		read := c.Source.OwnersAtFunc
		c.Source.OwnersAtFunc = func(keys []monitor.Key, at time.Time) (Owners, error) {
			asked = append(asked, at)
			return read(keys, at)
		}
	})
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	pressDrain(m, "t")
	first := press(m, "h") // its read is in flight
	at1 := m.tl.cursor
	for range 4 {
		drain(m, press(m, "h"))
	}
	if len(asked) != 0 {
		t.Fatalf("asked at %v while a read was in flight, want nothing", asked)
	}
	drain(m, first)
	if len(asked) != 2 || !asked[0].Equal(at1) || !asked[1].Equal(m.tl.cursor) {
		t.Errorf("asked at %v, want %v then the cursor %v", asked, at1, m.tl.cursor)
	}
	if !m.tl.ownersOK || !m.tl.ownersAt.Equal(m.tl.cursor) {
		t.Errorf("owners read for %v (ok %v), want the cursor %v", m.tl.ownersAt, m.tl.ownersOK, m.tl.cursor)
	}
}

// TestTimelineLanesPageThroughTheWindowsSessions: the lanes are a page of
// the window's sessions in key order: they open around the session selected
// in the table, ↓ moves them a session on, G shows the last ones (and ↓
// then reads nothing: no session follows), g the first ones.
func TestTimelineLanesPageThroughTheWindowsSessions(t *testing.T) {
	t.Parallel()
	var reads int
	var zeta []data.Lease
	for i := range 30 {
		zeta = append(zeta, mkLease("zeta", fmt.Sprintf("s%02d", i), "dev", run(byte(20+i)), int64(100+i), time.Minute, time.Second, time.Hour))
	}
	m, _ := newModel(t, 80, 24, countingHistory(&reads, zeta))
	apply(m, syncBatch(append(loadedLeases(), zeta...), loadedEvents()))
	sel, _ := m.selected()
	pressDrain(m, "t")
	n := m.tlGeometry().lanes
	if len(m.tl.keys) != n || !slices.Contains(m.tl.keys, mkey(sel.Key)) {
		t.Fatalf("opened on lanes %v, want %d lanes around the selected %s", m.tl.keys, n, sel.Key)
	}
	second := m.tl.keys[1]
	pressDrain(m, "j")
	if m.tl.keys[0] != second {
		t.Errorf("after ↓ the first lane is %s, want %s", m.tl.keys[0], second)
	}
	pressDrain(m, "G")
	last := zeta[len(zeta)-1].Key
	if got := m.tl.keys[len(m.tl.keys)-1]; got.Key != last || m.tl.more {
		t.Errorf("after G the last lane is %s (more %v), want %s and no more", got, m.tl.more, last)
	}
	before := reads
	pressDrain(m, "j")
	if reads != before || m.tl.keys[len(m.tl.keys)-1].Key != last {
		t.Errorf("↓ at the last lanes read %d times and shows %v, want no read", reads-before, m.tl.keys)
	}
	pressDrain(m, "g")
	if first := (data.Key{Account: "acme", Session: "chat-7f3a"}); m.tl.keys[0].Key != first {
		t.Errorf("after g the first lane is %s, want %s", m.tl.keys[0], first)
	}
}

// TestTimelineOpenedAtStartFillsTheScreen: a monitor that opens on the
// timeline (watch --timeline), before any window size is known, shows as
// many lanes as the screen holds from its first tick.
func TestTimelineOpenedAtStartFillsTheScreen(t *testing.T) {
	t.Parallel()
	clock := &fixedClock{t: base}
	cfg := Config{Now: clock.Now, Location: time.UTC, Timeline: true}
	withHistory(time.Time{})(&cfg)
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	_, cmd := m.Update(tickMsg(clock.t))
	drain(m, cmd)
	if want := min(m.tlGeometry().lanes, len(fixtureSessions(server.Add(-time.Hour), server, time.Time{}, nil))); len(m.tl.keys) < 2 || len(m.tl.keys) != want {
		t.Errorf("opened on the timeline: %d lanes %v, want %d", len(m.tl.keys), m.tl.keys, want)
	}
}
