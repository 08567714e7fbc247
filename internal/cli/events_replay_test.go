package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestEventsFollowPrintsNoReplay: `events --since 0 --follow`
// prints a long history (more than 4,000 events: it remembers only the
// last 1,000 ids it printed), then a role with CONNECT only sends again the
// notifications of its first events. Before, those older than the
// follower's window were printed a second time; now each event is printed
// once, and a real event after the replays is printed too.
func TestEventsFollowPrintsNoReplay(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	for i := range 10 {
		pgtest.MarkerEvent(t, db, "old"+string(rune('a'+i)), false)
	}
	old := pgtest.History(t, s)
	pgtest.BulkEvents(t, db, 4100)
	out, errOut := follow(t, map[string]string{"DATABASE_URL": db.URL}, "--since", "0")
	pgtest.Eventually(t, 30*time.Second, "following events live", func() bool {
		return strings.Contains(errOut.String(), "following events live")
	})

	nobody := pgtest.ConnectNobody(t, db)
	for range 3 {
		nobody.Notify(t, pgtest.Replays(t, old, 1))
	}
	fresh := pgtest.MarkerEvent(t, db, "new", false)
	pgtest.Eventually(t, 30*time.Second, "the new event printed", func() bool {
		ids := printedIDs(t, out.String())
		return len(ids) > 0 && ids[len(ids)-1] == fresh
	})
	times := map[int64]int{}
	for _, id := range printedIDs(t, out.String()) {
		times[id]++
	}
	for _, ev := range old {
		if n := times[ev.ID]; n != 1 {
			t.Errorf("old event %d printed %d times, want once", ev.ID, n)
		}
	}
	if want := len(old) + 4100 + 1; len(times) != want {
		t.Errorf("printed %d events, want %d", len(times), want)
	}
}
