package monitor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestReplayedEventsAreNotCountedAgain: events older than the
// monitor's snapshot (below its baseline: the first resync loads a short
// tail), their real payloads sent again ten times by a role with CONNECT
// only, change nothing: before, the State applied every id it had not seen,
// so an old acquired put back a lease that no longer exists (an expired
// lease in the header's counts), and an old forced release counted again.
// A real event after them is applied, once.
func TestReplayedEventsAreNotCountedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	for i := range 10 {
		k, run := data.Key{Account: "old", Session: fmt.Sprintf("s%d", i)}, uuid.New()
		monitor.MustAcquire(t, s, k, run, time.Minute)
		if i%2 == 0 {
			if _, err := s.ForceRelease(ctx, k, data.PublicRunID(run), "old"); err != nil {
				t.Fatal(err)
			}
		} else if _, err := s.Release(ctx, k, run); err != nil {
			t.Fatal(err)
		}
	}
	old := pgtest.History(t, s)
	if len(old) != 20 {
		t.Fatalf("%d old events, want 20", len(old))
	}
	m := startMirror(t, s, monitor.FeedConfig{Tail: 1, DeltaInterval: time.Hour, NotifiedInterval: time.Hour})
	waitFor(t, m, "the first resync", func(s *monitor.State) bool { return s.Synced() })
	var applied int64
	m.Read(func(st *monitor.State) {
		applied = st.Applied()
		if b := st.Baseline(); b < old[len(old)-2].ID {
			t.Fatalf("baseline %d, want the old events (up to %d) below it but the last", b, old[len(old)-1].ID)
		}
	})

	nobody := pgtest.ConnectNobody(t, db)
	for range 10 {
		nobody.Notify(t, pgtest.Replays(t, old, 1))
	}
	k := data.Key{Account: "new", Session: "s"}
	monitor.MustAcquire(t, s, k, uuid.New(), time.Minute)
	waitFor(t, m, "the new event", func(st *monitor.State) bool {
		_, ok := st.Lease(k)
		return ok
	})
	m.Read(func(st *monitor.State) {
		if got := st.Applied() - applied; got != 1 {
			t.Errorf("applied %d events after 10 replays of 20 old ones and one new, want 1 (the new)", got)
		}
		if got := st.Len(); got != 1 {
			t.Errorf("%d leases shown, want 1 (the new one): %v", got, st.Leases())
		}
		if c := st.Counts(st.ServerNow(time.Now())); c.Expired != 0 {
			t.Errorf("counts %+v after the replays, want no expired lease", c)
		}
		var again []int64
		for _, ev := range st.Events() {
			if ev.ID < old[len(old)-1].ID {
				again = append(again, ev.ID)
			}
		}
		if len(again) > 0 {
			t.Errorf("old events %v listed again", again)
		}
	})
}
