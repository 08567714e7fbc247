package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/theme"
)

// TestBuildLane: the lane rebuilt from a known history, span by span and
// mark by mark, and how it draws without colour.
func TestBuildLane(t *testing.T) {
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
	// dev-c still has the row, expired at 70 (the live lease says so: the
	// events do not, since renewals write none).
	live := &data.Lease{Key: k, RunID: run(3), Fence: 3, Holder: "dev-c", ExpiresAt: at(70)}
	ln := buildLane(laneInput{key: k, from: t0, until: at(100), historyStart: at(5), events: evs, live: live})
	want := []struct {
		kind     spanKind
		from, to int
		holder   string
	}{
		{spanUnknown, 0, 5, ""}, {spanNobody, 5, 10, ""}, {spanHeld, 10, 25, "dev-a"}, {spanExpired, 25, 30, "dev-a"},
		{spanHeld, 30, 50, "dev-b"}, {spanNobody, 50, 60, ""}, {spanHeld, 60, 70, "dev-c"}, {spanExpired, 70, 100, "dev-c"},
	}
	if len(ln.spans) != len(want) {
		t.Fatalf("%d spans %+v, want %d", len(ln.spans), ln.spans, len(want))
	}
	for i, w := range want {
		s := ln.spans[i]
		if s.kind != w.kind || !s.from.Equal(at(w.from)) || !s.to.Equal(at(w.to)) || s.holder != w.holder {
			t.Errorf("span %d = %v %v..%v %q, want %v %ds..%ds %q", i, s.kind, s.from.Sub(t0), s.to.Sub(t0), s.holder, w.kind, w.from, w.to, w.holder)
		}
	}
	wantMarks := []struct {
		kind markKind
		at   int
	}{{markTakeover, 30}, {markZombie, 32}, {markForced, 50}, {markOther, 55}, {markOther, 60}, {markExpired, 70}}
	if len(ln.marks) != len(wantMarks) {
		t.Fatalf("marks %+v, want %d", ln.marks, len(wantMarks))
	}
	for i, w := range wantMarks {
		if ln.marks[i].kind != w.kind || !ln.marks[i].at.Equal(at(w.at)) {
			t.Errorf("mark %d = %v at %v, want %v at %ds", i, ln.marks[i].kind, ln.marks[i].at.Sub(t0), w.kind, w.at)
		}
	}
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

// TestBuildLaneRenewedHolderDidNotExpire: an acquisition's expiry is only
// its first: a holder that renewed and then released shows held until the
// release, not expired at its first expiry (the release records the
// expiry the row had); one whose release came after its expiry shows the
// expired stretch before it.
func TestBuildLaneRenewedHolderDidNotExpire(t *testing.T) {
	t.Parallel()
	t0 := server.Add(-100 * time.Second)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "s"}
	evs := []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(10), Key: k, RunID: run(1), Fence: 1, Holder: "dev-a", ExpiresAt: at(25)},
		{ID: 2, Kind: data.KindReleased, At: at(60), Key: k, RunID: run(1), Fence: 1, ExpiresAt: at(70)},
		{ID: 3, Kind: data.KindAcquired, At: at(70), Key: k, RunID: run(2), Fence: 2, Holder: "dev-b", ExpiresAt: at(75)},
		{ID: 4, Kind: data.KindReleased, At: at(90), Key: k, RunID: run(2), Fence: 2, ExpiresAt: at(80)},
	}
	ln := buildLane(laneInput{key: k, from: t0, until: at(100), events: evs})
	var got []string
	for _, s := range ln.spans {
		got = append(got, fmt.Sprintf("%d %d-%d", s.kind, int(s.from.Sub(t0).Seconds()), int(s.to.Sub(t0).Seconds())))
	}
	want := []string{"1 0-10", "2 10-60", "1 60-70", "2 70-80", "3 80-90", "1 90-100"}
	if !slices.Equal(got, want) {
		t.Errorf("spans %v, want %v (kind from-to)", got, want)
	}
	for _, mk := range ln.marks {
		if mk.kind == markExpired {
			t.Errorf("mark %v at %v: a holder that released has a successor or none, not an expiry without one", mk.kind, mk.at.Sub(t0))
		}
	}
}

// TestTruncateEndsEveryLane: a TRUNCATE's event names no session; read
// with the lanes' history it ends the span of every lane.
func TestTruncateEndsEveryLane(t *testing.T) {
	t.Parallel()
	a, b := data.Key{Account: "a", Session: "1"}, data.Key{Account: "a", Session: "2"}
	t0 := server.Add(-time.Minute)
	d := newHistoryData(historyQuery{keys: []data.Key{a, b}, from: t0, until: server}, History{Events: []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: t0.Add(time.Second), Key: a, RunID: run(1), Fence: 1, Holder: "x"},
		{ID: 2, Kind: data.KindAcquired, At: t0.Add(2 * time.Second), Key: b, RunID: run(2), Fence: 2, Holder: "y"},
		{ID: 3, Kind: data.KindTruncated, At: t0.Add(30 * time.Second)},
	}})
	for _, k := range []data.Key{a, b} {
		ln := buildLane(laneInput{key: k, from: t0, until: server, events: d.byKey[k]})
		if s, ok := ln.at(t0.Add(40 * time.Second)); !ok || s.kind != spanNobody {
			t.Errorf("%v after the TRUNCATE: %v, want nobody", k, s.kind)
		}
	}
	if len(d.events) != 3 {
		t.Errorf("%d events for the pane, want 3 (the TRUNCATE once)", len(d.events))
	}
}
