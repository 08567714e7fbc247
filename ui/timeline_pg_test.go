package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestScrubAgreesWithTheHistory: on a real database with a known history
// (acquire, renew, expiry, zombie renewals, takeover, forced release,
// expiry without successor: pgtest.BuildKnownHistory), the timeline reads
// it through the store (storeTimeline), and at the instants just before and
// at each event both the lane and the scrubbed held-by column say what the
// history says: nobody, which run, expired or not, and the TTL left then
// where the history pins it. Before the history kept, the column says so.
func TestScrubAgreesWithTheHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	h := pgtest.BuildKnownHistory(t, db, s)
	m, _ := timelineOnStore(t, s, "t", "+", "+", "+", "+", "+") // a 10 s window: the history is a few seconds long
	runs := map[string]string{}
	for _, ev := range h.Events {
		if ev.Kind == data.KindAcquired || ev.Kind == data.KindTakenOver { // a rejection names the holder, not its run's
			runs[ev.RunID.String()] = ev.Holder
		}
	}
	for _, p := range h.Probes {
		drain(m, m.scrubTo(p.At))
		if !m.tl.scrubbed || !m.tl.cursor.Equal(p.At) || !m.tl.ownersOK {
			t.Fatalf("%s: not scrubbed to %v (scrubbed %v, cursor %v, owners read %v)", p.Name, p.At, m.tl.scrubbed, m.tl.cursor, m.tl.ownersOK)
		}
		cell := ansi.Strip(m.heldCell(mkey(h.Key), 40))
		l, held := m.tl.owners.Leases[mkey(h.Key)]
		switch {
		case held != p.Held:
			t.Errorf("%s: held %v (%q), want %v", p.Name, held, cell, p.Held)
			continue
		case !p.Held:
			if !strings.HasPrefix(cell, "nobody") {
				t.Errorf("%s: held-by %q, want nobody", p.Name, cell)
			}
		case l.RunID != p.Run || !strings.HasPrefix(cell, runs[p.Run.String()]):
			t.Errorf("%s: held-by %q (run %v), want %s (run %v)", p.Name, cell, l.RunID, runs[p.Run.String()], p.Run)
		case p.Expired && !strings.Contains(cell, "exp "):
			t.Errorf("%s: held-by %q, want it expired", p.Name, cell)
		case p.ExpiryKnown && !p.Expired && !strings.HasSuffix(cell, " "+compact(p.ExpiresAt.Sub(p.At))):
			t.Errorf("%s: held-by %q, want %s left", p.Name, cell, compact(p.ExpiresAt.Sub(p.At)))
		case !p.ExpiryKnown && !strings.Contains(cell, "≥") && !strings.Contains(cell, "≤"):
			t.Errorf("%s: held-by %q, want a bound (the renewal is not in the history)", p.Name, cell)
		}
		w := m.tlWindow()
		lanes := m.timelineLanes(w)
		sp, ok := lanes[0].At(p.At)
		want := monitor.SpanNobody
		switch {
		case p.Held && p.Expired:
			want = monitor.SpanExpired
		case p.Held:
			want = monitor.SpanHeld
		}
		if !ok || sp.Kind != want || (p.Held && sp.Run != p.Run) {
			t.Errorf("%s: the lane shows %v run %v at %v, want %v run %v", p.Name, sp.Kind, sp.Run, p.At, want, p.Run)
		}
	}
	// Nothing was pruned: before the database's first event nobody held it.
	drain(m, m.scrubTo(h.Start.Add(-time.Millisecond)))
	if cell := ansi.Strip(m.heldCell(mkey(h.Key), 40)); !strings.HasPrefix(cell, "nobody") {
		t.Errorf("before the first event of a whole history: held-by %q, want nobody", cell)
	}
	// Once the oldest event is gone (as prune_events removes them), the
	// instant is before the history kept, and the column says so.
	if _, err := db.Conn(t).Exec(ctx, `DELETE FROM lease.event WHERE id = (SELECT min(id) FROM lease.event)`); err != nil {
		t.Fatal(err)
	}
	drain(m, m.scrubTo(h.Start))
	if cell := ansi.Strip(m.heldCell(mkey(h.Key), 40)); !strings.HasPrefix(cell, "before history") {
		t.Errorf("before the history kept: held-by %q, want \"before history\"", cell)
	}
}

// TestTimelineReadsTruncates: a TRUNCATE's event, which names no session,
// is in the lanes' history read from a real database (as the key with empty ids),
// and ends the lane's span.
func TestTimelineReadsTruncates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	sqlAcquire(t, conn, k, "1 hour", "device-a")
	if _, err := conn.Exec(ctx, `TRUNCATE lease.session_lease`); err != nil {
		t.Fatal(err)
	}
	var now time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	timeline, _ := storeTimeline(ctx, db.Store(t))
	h, err := timeline(LanesQuery{Sessions: data.SessionsQuery{Since: now.Add(-time.Minute), Until: now, Limit: 10},
		Since: now.Add(-time.Minute), Until: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Keys) != 1 || h.Keys[0] != mkey(k) {
		t.Fatalf("lanes %v, want %v (its lease was truncated, its history stays)", h.Keys, k)
	}
	var kinds []data.Kind
	for _, ev := range h.Events {
		kinds = append(kinds, ev.Kind)
	}
	if len(kinds) != 2 || kinds[0] != data.KindAcquired || kinds[1] != data.KindTruncated {
		t.Fatalf("events %v, want acquired then truncated", kinds)
	}
	d := newHistoryData(historyQuery{from: now.Add(-time.Minute), until: now}, h)
	ln := monitor.BuildLane(monitor.LaneInput{Key: mkey(k), From: now.Add(-time.Minute), Until: now.Add(time.Millisecond),
		HistoryStart: h.Start.HistoryStart, Events: d.byKey[mkey(k)]})
	if s, ok := ln.At(now); !ok || s.Kind != monitor.SpanNobody {
		t.Errorf("after the TRUNCATE the lane shows %v, want nobody", s.Kind)
	}
}

// timelineOnStore is a 150x40 model whose timeline reads the history from s
// (storeTimeline), its table synced with s's leases now (a fixed clock,
// returned), with keys pressed and what they read answered. It fails t
// unless the lanes' history was read.
func timelineOnStore(t *testing.T, s *data.Store, keys ...string) (*Model, *fixedClock) {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	timeline, owners := storeTimeline(ctx, s)
	clock := &fixedClock{t: time.Now()}
	m, err := New(Config{Now: clock.Now, Location: time.UTC, Source: Source{TimelineFunc: timeline, OwnersAtFunc: owners}})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: 150, Height: 40})
	apply(m, monitor.Batch{Items: []monitor.Item{{Sync: &data.Sync{Snapshot: snap}, At: clock.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	pressDrain(m, keys...)
	if m.tl.loaded == nil || m.tl.loadErr != nil {
		t.Fatalf("the history was not read: %v", m.tl.loadErr)
	}
	return m, clock
}
