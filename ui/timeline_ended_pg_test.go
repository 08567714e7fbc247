package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestTimelineShowsSessionsThatEnded: on a real database, a session
// acquired and released before the window's end has its lane, held by its
// holder until the release and nobody after, beside a session held now,
// though the table shows only the lease held now (before, "no
// sessions: the timeline shows the table's rows"); the filter finds it by
// its id, and by its holder's label.
func TestTimelineShowsSessionsThatEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	ended, live := data.Key{Account: "acme", Session: "ended"}, data.Key{Account: "acme", Session: "live"}
	run := uuid.New()
	if _, err := s.Acquire(ctx, ended, run, time.Minute, "phone pid 41"); err != nil {
		t.Fatal(err)
	}
	var heldAt time.Time
	if err := db.Conn(t).QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&heldAt); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Release(ctx, ended, run); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if _, err := s.Acquire(ctx, live, uuid.New(), time.Minute, "desktop pid 42"); err != nil {
		t.Fatal(err)
	}
	m, _ := timelineOnStore(t, s, "t")
	if len(m.rows) != 1 {
		t.Fatalf("the table has %d rows, want 1 (the lease held now)", len(m.rows))
	}
	lane := func(k data.Key) *monitor.Lane {
		lanes := m.timelineLanes(m.tlWindow())
		for i := range lanes {
			if lanes[i].Key.Key == k {
				return &lanes[i]
			}
		}
		return nil
	}
	ln := lane(ended)
	if ln == nil {
		t.Fatalf("no lane of %s, released before the window's end; lanes %v:\n%s", ended, m.tl.keys, screen(m))
	}
	if sp, ok := ln.At(heldAt); !ok || sp.Kind != monitor.SpanHeld || sp.Holder != "phone pid 41" {
		t.Errorf("%s's lane while it was held shows %v %q, want held by phone pid 41", ended, sp.Kind, sp.Holder)
	}
	if sp, ok := ln.At(ln.Spans[len(ln.Spans)-1].From); !ok || sp.Kind != monitor.SpanNobody {
		t.Errorf("%s's lane ends %v, want nobody after the release", ended, sp.Kind)
	}
	if lane(live) == nil {
		t.Errorf("no lane of %s, held now", live)
	}
	for _, find := range []string{"ENDED", "phone pid 41"} {
		pressDrain(m, "/")
		for _, r := range find {
			pressDrain(m, string(r))
		}
		pressDrain(m, "enter")
		if len(m.tl.keys) != 1 || m.tl.keys[0].Key != ended || !strings.Contains(screen(m), "acme/ended") {
			t.Errorf("/%s: lanes %v, want only %s:\n%s", find, m.tl.keys, ended, screen(m))
		}
		pressDrain(m, "/", "esc") // clears the filter: every lane again
		if len(m.tl.keys) != 2 {
			t.Errorf("after clearing /%s: lanes %v, want both sessions", find, m.tl.keys)
		}
	}
}

// TestTimelineLastLanesOnAStore: read through the store, G shows the last
// of the window's sessions and says none follow (the read asks one session
// more than the lanes, to know: for the last page that one comes before
// them); g the first.
func TestTimelineLastLanesOnAStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	var keys []data.Key
	for i := range 60 {
		k := data.Key{Account: "acme", Session: fmt.Sprintf("s%02d", i)}
		keys = append(keys, k)
		if _, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "dev"); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := timelineOnStore(t, s, "t", "G")
	n := m.tlGeometry().lanes
	if len(m.tl.keys) != n || m.tl.keys[n-1].Key != keys[len(keys)-1] || m.tl.keys[0].Key != keys[len(keys)-n] || m.tl.more {
		t.Errorf("after G: lanes %v (more %v), want the last %d sessions and no more", m.tl.keys, m.tl.more, n)
	}
	pressDrain(m, "g")
	if m.tl.keys[0].Key != keys[0] || !m.tl.more {
		t.Errorf("after g: first lane %v (more %v), want %v and more", m.tl.keys[0], m.tl.more, keys[0])
	}
}
