package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestListenerDropsReplayedEvents: notifications that name
// events committed before the listener listened (their real payloads, sent
// again by a role with CONNECT only) are behind its reading position: the
// consumer's resync reflects them, and they are never delivered (counted
// in Repeated). A new event after them is delivered once, and, while the
// catch-up reads, so is a notification of it sent again. Without the
// catch-up (a lease.Client that only holds) the position still drops the
// old ids.
func TestListenerDropsReplayedEvents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catchUp time.Duration
	}{{"catch-up", 10 * time.Millisecond}, {"no catch-up", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			s := db.Store(t)
			for i := range 10 {
				k, run := data.Key{Account: "a", Session: "old" + string(rune('a'+i))}, uuid.New()
				mustAcquire(t, s, k, run, time.Minute)
				if i%2 == 0 {
					if _, err := s.ForceRelease(ctx, k, data.PublicRunID(run), "old"); err != nil {
						t.Fatal(err)
					}
				}
			}
			old := events(t, s)
			l := startListener(t, s, data.ListenerConfig{CatchUp: tc.catchUp})
			waitResync(t, l)

			nobody := pgtest.ConnectNobody(t, db)
			for range 20 {
				nobody.Notify(t, pgtest.Replays(t, old, 1))
			}
			mustAcquire(t, s, data.Key{Account: "a", Session: "new"}, uuid.New(), time.Minute)
			var fresh data.Event
			for replayed := 0; fresh.ID == 0; {
				switch ev := waitEvent(t, l); {
				case ev.Key.Session == "new":
					fresh = ev
				case replayed == 0:
					t.Errorf("old event %d (%s) delivered again after it was replayed", ev.ID, ev.Kind)
					fallthrough
				default:
					replayed++
				}
			}
			if got, want := l.Repeated(), int64(20*len(old)); got != want {
				t.Errorf("Repeated() = %d, want %d (every replay)", got, want)
			}
			if tc.catchUp < 0 {
				return
			}
			nobody.Notify(t, pgtest.Replays(t, []data.Event{fresh}, 5))
			marker := silentAcquire(t, db.Conn(t), data.Key{Account: "a", Session: "marker"}, uuid.New())
			for {
				ev := waitEvent(t, l)
				if ev.ID == fresh.ID {
					t.Fatalf("event %d delivered again after its notification was sent again", ev.ID)
				}
				if ev.ID == marker {
					break
				}
			}
		})
	}
}
