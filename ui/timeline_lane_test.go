package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/theme"
)

// TestDrawLane: a lane of a known history (the model's BuildLane) draws as
// it should without colour: the history's start, holders' spans with their
// labels, the expired stretch, the marks.
func TestDrawLane(t *testing.T) {
	t.Parallel()
	t0 := server.Add(-100 * time.Second)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "s"}
	evs := []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(10), Key: k, RunID: run(1), Fence: 1, Holder: "dev-a", ExpiresAt: at(25)},
		{ID: 2, Kind: data.KindTakenOver, At: at(30), Key: k, RunID: run(2), PrevRunID: run(1), Fence: 2, PrevFence: 1, Holder: "dev-b", ExpiresAt: at(45), PrevExpiresAt: at(25)},
		{ID: 3, Kind: data.KindRenewRejected, At: at(32), Key: k, RunID: run(1), Fence: 2},
		{ID: 4, Kind: data.KindForceReleased, At: at(50), Key: k, RunID: run(2), Fence: 2},
		{ID: 5, Kind: "queue_joined", At: at(55), Key: k},
		{ID: 6, Kind: "brand_new", At: at(60), Key: k, RunID: run(3), Fence: 3, Holder: "dev-c", ExpiresAt: at(70)},
	}
	live := &data.Lease{Key: k, RunID: run(3), Fence: 3, Holder: "dev-c", ExpiresAt: at(70)}
	ln := monitor.BuildLane(monitor.LaneInput{Key: mkey(k), From: t0, Until: at(100), HistoryStart: at(5), Events: evs, Live: live})
	st := newStyles(theme.Dark())
	got := ansi.Strip(drawLane(&ln, window{from: t0, cell: time.Second, cells: 100}, &st.tl).text)
	if n := ansi.StringWidth(got); n != 100 {
		t.Errorf("lane is %d cells, want 100: %q", n, got)
	}
	for _, part := range []string{"┊─────█dev-a", "░░░░░»", "Z", "█dev-b", "✖────•", "†░░"} {
		if !strings.Contains(got, part) {
			t.Errorf("lane %q lacks %q", got, part)
		}
	}
	if strings.Contains(got[:strings.Index(got, "┊")], "─") {
		t.Errorf("lane %q shows nobody before the history kept", got)
	}
}

// TestTruncateEndsEveryLane: a TRUNCATE's event names no session; read
// with the lanes' history it ends the span of every lane.
func TestTruncateEndsEveryLane(t *testing.T) {
	t.Parallel()
	a, b := data.Key{Account: "a", Session: "1"}, data.Key{Account: "a", Session: "2"}
	t0 := server.Add(-time.Minute)
	d := newHistoryData(historyQuery{from: t0, until: server}, History{Keys: mkeys([]data.Key{a, b}), Events: []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: t0.Add(time.Second), Key: a, RunID: run(1), Fence: 1, Holder: "x"},
		{ID: 2, Kind: data.KindAcquired, At: t0.Add(2 * time.Second), Key: b, RunID: run(2), Fence: 2, Holder: "y"},
		{ID: 3, Kind: data.KindTruncated, At: t0.Add(30 * time.Second)},
	}})
	for _, k := range []data.Key{a, b} {
		ln := monitor.BuildLane(monitor.LaneInput{Key: mkey(k), From: t0, Until: server, Events: d.byKey[mkey(k)]})
		if s, ok := ln.At(t0.Add(40 * time.Second)); !ok || s.Kind != monitor.SpanNobody {
			t.Errorf("%v after the TRUNCATE: %v, want nobody", k, s.Kind)
		}
	}
	if len(d.events) != 3 {
		t.Errorf("%d events for the pane, want 3 (the TRUNCATE once)", len(d.events))
	}
}
