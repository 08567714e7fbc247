package monitor

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// laneHistory is a known history of one session over 100 s from t0, and
// the live lease at its end: dev-c still has the row, expired at 70 (the
// live lease says so: the events do not, since renewals write none).
func laneHistory(t0 time.Time) (data.Key, []data.Event, *data.Lease) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "s"}
	evs := []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(10), Key: k, RunID: runs[0], Fence: 1, Holder: "dev-a", ExpiresAt: at(25)},
		{ID: 2, Kind: data.KindTakenOver, At: at(30), Key: k, RunID: runs[1], PrevRunID: runs[0], Fence: 2, PrevFence: 1, Holder: "dev-b", ExpiresAt: at(45), PrevExpiresAt: at(25)},
		{ID: 3, Kind: data.KindRenewRejected, At: at(32), Key: k, RunID: runs[0], Fence: 2},
		{ID: 4, Kind: data.KindForceReleased, At: at(50), Key: k, RunID: runs[1], Fence: 2},
		{ID: 5, Kind: "queue_joined", At: at(55), Key: k},
		{ID: 6, Kind: "brand_new", At: at(60), Key: k, RunID: runs[2], Fence: 3, Holder: "dev-c", ExpiresAt: at(70)},
	}
	return k, evs, &data.Lease{Key: k, RunID: runs[2], Fence: 3, Holder: "dev-c", ExpiresAt: at(70)}
}

// TestBuildLane: the lane rebuilt from a known history, span by span and
// mark by mark: which run held the session when is the model's.
func TestBuildLane(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k, evs, live := laneHistory(t0)
	ln := BuildLane(LaneInput{Key: Key{Key: k}, From: t0, Until: at(100), HistoryStart: at(5), Events: evs, Live: live})
	want := []struct {
		kind     SpanKind
		from, to int
		holder   string
	}{
		{SpanUnknown, 0, 5, ""}, {SpanNobody, 5, 10, ""}, {SpanHeld, 10, 25, "dev-a"}, {SpanExpired, 25, 30, "dev-a"},
		{SpanHeld, 30, 50, "dev-b"}, {SpanNobody, 50, 60, ""}, {SpanHeld, 60, 70, "dev-c"}, {SpanExpired, 70, 100, "dev-c"},
	}
	if len(ln.Spans) != len(want) {
		t.Fatalf("%d spans %+v, want %d", len(ln.Spans), ln.Spans, len(want))
	}
	for i, w := range want {
		s := ln.Spans[i]
		if s.Kind != w.kind || !s.From.Equal(at(w.from)) || !s.To.Equal(at(w.to)) || s.Holder != w.holder {
			t.Errorf("span %d = %v %v..%v %q, want %v %ds..%ds %q", i, s.Kind, s.From.Sub(t0), s.To.Sub(t0), s.Holder, w.kind, w.from, w.to, w.holder)
		}
	}
	wantMarks := []struct {
		kind MarkKind
		at   int
	}{{MarkTakeover, 30}, {MarkZombie, 32}, {MarkForced, 50}, {MarkOther, 55}, {MarkOther, 60}, {MarkExpired, 70}}
	if len(ln.Marks) != len(wantMarks) {
		t.Fatalf("marks %+v, want %d", ln.Marks, len(wantMarks))
	}
	for i, w := range wantMarks {
		if ln.Marks[i].Kind != w.kind || !ln.Marks[i].At.Equal(at(w.at)) {
			t.Errorf("mark %d = %v at %v, want %v at %ds", i, ln.Marks[i].Kind, ln.Marks[i].At.Sub(t0), w.kind, w.at)
		}
	}
	if s, ok := ln.At(at(40)); !ok || s.Run != runs[1] || s.Fence != 2 {
		t.Errorf("At(40s) = %+v, %v; want run %v fence 2", s, ok, runs[1])
	}
	if _, ok := ln.At(at(100)); ok {
		t.Error("At(the lane's end) found a span, want none: spans end before it")
	}
}

// TestBuildLaneRenewedHolderDidNotExpire: an acquisition's expiry is only
// its first: a holder that renewed and then released shows held until the
// release, not expired at its first expiry (the release records the
// expiry the row had); one whose release came after its expiry shows the
// expired stretch before it.
func TestBuildLaneRenewedHolderDidNotExpire(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "s"}
	evs := []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(10), Key: k, RunID: runs[0], Fence: 1, Holder: "dev-a", ExpiresAt: at(25)},
		{ID: 2, Kind: data.KindReleased, At: at(60), Key: k, RunID: runs[0], Fence: 1, ExpiresAt: at(70)},
		{ID: 3, Kind: data.KindAcquired, At: at(70), Key: k, RunID: runs[1], Fence: 2, Holder: "dev-b", ExpiresAt: at(75)},
		{ID: 4, Kind: data.KindReleased, At: at(90), Key: k, RunID: runs[1], Fence: 2, ExpiresAt: at(80)},
	}
	ln := BuildLane(LaneInput{Key: Key{Key: k}, From: t0, Until: at(100), Events: evs})
	var got []string
	for _, s := range ln.Spans {
		got = append(got, fmt.Sprintf("%d %d-%d", s.Kind, int(s.From.Sub(t0).Seconds()), int(s.To.Sub(t0).Seconds())))
	}
	want := []string{"1 0-10", "2 10-60", "1 60-70", "2 70-80", "3 80-90", "1 90-100"}
	if !slices.Equal(got, want) {
		t.Errorf("spans %v, want %v (kind from-to)", got, want)
	}
	for _, mk := range ln.Marks {
		if mk.Kind == MarkExpired {
			t.Errorf("mark %v at %v: a holder that released has a successor or none, not an expiry without one", mk.Kind, mk.At.Sub(t0))
		}
	}
}

// TestBuildLaneOfAnEndedSession: a session released inside the window, and
// one held from before it and released after its end, have their lanes as
// any other: held until the release, nobody after; held from
// the window's start by the run the start says.
func TestBuildLaneOfAnEndedSession(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "ended"}
	ended := BuildLane(LaneInput{Key: Key{Key: k}, From: t0, Until: at(100), Events: []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(20), Key: k, RunID: runs[0], Fence: 1, Holder: "phone", ExpiresAt: at(35)},
		{ID: 2, Kind: data.KindReleased, At: at(40), Key: k, RunID: runs[0], Fence: 1, ExpiresAt: at(52)},
	}})
	if s, ok := ended.At(at(30)); !ok || s.Kind != SpanHeld || s.Holder != "phone" {
		t.Errorf("ended lane at 30s = %+v, want held by phone", s)
	}
	if s, ok := ended.At(at(90)); !ok || s.Kind != SpanNobody {
		t.Errorf("ended lane at 90s = %+v, want nobody", s)
	}
	start := &data.Lease{Key: k, RunID: runs[1], Fence: 7, Holder: "desk", ExpiresAt: at(15)}
	across := BuildLane(LaneInput{Key: Key{Key: k}, From: t0, Until: at(100), Start: start})
	if len(across.Spans) != 1 || across.Spans[0].Kind != SpanHeld || across.Spans[0].Holder != "desk" {
		t.Errorf("lane held across the window = %+v, want one span held by desk", across.Spans)
	}
}

// TestBuildLaneMessages: the inbox's events are message marks and move no
// lease, even one that names a run and a fence after the run released
// (a message expired after its last run ended: its run id, fence and the
// message's expiry, which read as a hand to that run if taken for a newer
// schema's kind).
func TestBuildLaneMessages(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "s"}
	evs := []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(10), Key: k, RunID: runs[0], Fence: 1, Holder: "dev-a", ExpiresAt: at(90)},
		{ID: 2, Kind: data.KindMessageSent, At: at(11), Key: k, RunID: runs[0], Fence: 1, MessageID: 7, Holder: "phone", ExpiresAt: at(30)},
		{ID: 3, Kind: data.KindMessageDelivered, At: at(12), Key: k, RunID: runs[0], Fence: 1, MessageID: 7, Holder: "phone", ExpiresAt: at(30)},
		{ID: 4, Kind: data.KindReleased, At: at(20), Key: k, RunID: runs[0], Fence: 1},
		{ID: 5, Kind: data.KindMessageExpired, At: at(31), Key: k, RunID: runs[0], Fence: 1, MessageID: 7, Holder: "phone", ExpiresAt: at(30)},
	}
	ln := BuildLane(LaneInput{Key: Key{Key: k}, From: t0, Until: at(100), HistoryStart: at(5), Events: evs})
	want := []struct {
		kind     SpanKind
		from, to int
	}{{SpanUnknown, 0, 5}, {SpanNobody, 5, 10}, {SpanHeld, 10, 20}, {SpanNobody, 20, 100}}
	if len(ln.Spans) != len(want) {
		t.Fatalf("%d spans %+v, want %d", len(ln.Spans), ln.Spans, len(want))
	}
	for i, w := range want {
		if s := ln.Spans[i]; s.Kind != w.kind || !s.From.Equal(at(w.from)) || !s.To.Equal(at(w.to)) {
			t.Errorf("span %d = %v %v..%v, want %v %ds..%ds", i, s.Kind, s.From.Sub(t0), s.To.Sub(t0), w.kind, w.from, w.to)
		}
	}
	var got []MarkKind
	for _, m := range ln.Marks {
		got = append(got, m.Kind)
	}
	if !slices.Equal(got, []MarkKind{MarkMessage, MarkMessage, MarkMessage}) {
		t.Errorf("marks %v, want three message marks", got)
	}
}

// TestBuildLaneLimitRefused: a run refused the session at its account's
// limit is a limit-refused mark and moves no lease (it names a run, and
// no fence: nothing was granted).
func TestBuildLaneLimitRefused(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "s"}
	evs := []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(10), Key: k, RunID: runs[0], Fence: 1, Holder: "dev-a", ExpiresAt: at(90)},
		{ID: 2, Kind: data.KindReleased, At: at(20), Key: k, RunID: runs[0], Fence: 1},
		{ID: 3, Kind: data.KindLimitRefused, At: at(25), Key: k, RunID: runs[1], Holder: "phone", Reason: "account at its limit"},
	}
	ln := BuildLane(LaneInput{Key: Key{Key: k}, From: t0, Until: at(100), HistoryStart: at(5), Events: evs})
	if s, ok := ln.At(at(50)); !ok || s.Kind != SpanNobody {
		t.Errorf("lane at 50s = %+v, want nobody: a refusal grants nothing", s)
	}
	if len(ln.Marks) != 1 || ln.Marks[0].Kind != MarkRefused || !ln.Marks[0].At.Equal(at(25)) {
		t.Errorf("marks %+v, want one limit-refused mark at 25s", ln.Marks)
	}
}
