package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// A lease_app login may opt its own transaction out of the trigger's NOTIFY
// (lease.caller_notifies, what the library does before notifying after its
// commit). Issue 23 hid a takeover from every live consumer that way: (a)
// a forged notification naming the uncommitted event made the catch-up
// count it as heard while the feed's read-back found no row; (b) holding
// the transaction open while more than 1000 other events committed made
// the listener give its id up. The tests below make each attack as a real
// lease_app login, in listen and in poll mode, and require the takeover to
// reach the consumer (a Feed applied to a State, as the monitor, the
// exporter and events --follow do) exactly once after the commit.

// applied consumes a Feed the way its consumers do (State.Apply) and counts
// how many times each event id was applied as new.
type applied struct {
	mu     sync.Mutex
	times  map[int64]int
	change chan struct{}
}

func startApplied(t *testing.T, s *data.Store, cfg FeedConfig) *applied {
	t.Helper()
	f := NewFeed(s, cfg)
	a := &applied{times: map[int64]int{}, change: make(chan struct{}, 1)}
	st := NewState(Config{})
	stop := f.Start(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			b, ok := f.Next()
			if !ok {
				return
			}
			evs := st.Apply(b, time.Now())
			a.mu.Lock()
			for _, ev := range evs {
				a.times[ev.ID]++
			}
			a.mu.Unlock()
			signal(a.change)
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	return a
}

func (a *applied) count(id int64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.times[id]
}

// wait waits up to 30 s for id to be applied.
func (a *applied) wait(t *testing.T, what string, id int64) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for a.count(id) == 0 {
		select {
		case <-a.change:
		case <-deadline:
			t.Fatalf("waiting for %s (event %d): never applied", what, id)
		}
	}
}

// openHiddenTakeover lets a victim's lease on k expire, then takes it over
// as a new lease_app login, without committing.
func openHiddenTakeover(t *testing.T, db pgtest.DB, s *data.Store, k data.Key) *pgtest.HiddenTakeover {
	t.Helper()
	mustAcquire(t, s, k, uuid.New(), time.Millisecond)
	pgtest.WaitExpired(t, s.Pool(), k)
	return pgtest.OpenHiddenTakeover(t, db, k)
}

// committedEvent makes a transition on a fresh key as the owner and returns
// its event id: a marker that a consumer has read everything before it.
func committedEvent(t *testing.T, s *data.Store, session string) int64 {
	t.Helper()
	mustAcquire(t, s, data.Key{Account: "acme", Session: session}, uuid.New(), time.Hour)
	var id int64
	if err := s.Pool().QueryRow(context.Background(), `SELECT max(id) FROM lease.event WHERE session_id = $1`, session).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

var hiddenModes = []struct {
	name string
	cfg  FeedConfig
}{
	{"listen", FeedConfig{}},
	{"poll", FeedConfig{Listener: data.ListenerConfig{Poll: 50 * time.Millisecond}}},
}

// hideTakeover runs one way of hiding a takeover against each mode: with
// the feed consuming, it opens the takeover's transaction, hides it with
// attack, commits it, and wants the takeover applied exactly once.
func hideTakeover(t *testing.T, attack func(t *testing.T, db pgtest.DB, s *data.Store, a *applied, h *pgtest.HiddenTakeover)) {
	for _, mode := range hiddenModes {
		t.Run(mode.name, func(t *testing.T) {
			db := pgtest.New(t)
			s := db.Store(t)
			a := startApplied(t, s, mode.cfg)
			a.wait(t, "the first marker", committedEvent(t, s, "marker-0"))

			h := openHiddenTakeover(t, db, s, data.Key{Account: "acme", Session: "hidden"})
			attack(t, db, s, a, h)
			h.Commit(t)
			a.wait(t, "the hidden takeover", h.ID)
			a.wait(t, "the marker after the commit", committedEvent(t, s, "marker-2"))
			if n := a.count(h.ID); n != 1 {
				t.Errorf("the takeover %d was applied %d times, want once", h.ID, n)
			}
		})
	}
}

// forgeNotification is attack (a): the takeover's id is notified before
// it commits.
func forgeNotification(t *testing.T, _ pgtest.DB, s *data.Store, a *applied, h *pgtest.HiddenTakeover) {
	h.Forge(t)
	// Notifications arrive in commit order: once the consumer has this
	// marker, the feed has read the forged one back and found nothing.
	a.wait(t, "the marker after the forged notification", committedEvent(t, s, "marker-1"))
	if n := a.count(h.ID); n != 0 {
		t.Fatalf("the uncommitted takeover %d was applied %d times before its commit", h.ID, n)
	}
}

// holdOpen is attack (b): the takeover's transaction stays open while 1100
// other events commit. The silent marker is delivered only once the
// catch-up (or the poller) has read the bulk: the held id is then 1100
// behind.
func holdOpen(t *testing.T, db pgtest.DB, _ *data.Store, a *applied, _ *pgtest.HiddenTakeover) {
	pgtest.BulkEvents(t, db, 1100)
	a.wait(t, "the silent marker after the bulk", pgtest.MarkerEvent(t, db, "marker-1", true))
}

// TestHiddenTakeoverForgedNotification is attack (a). Before, in listen
// mode, the catch-up counted the id as heard, the feed's read-back found no
// row, and after the commit nothing delivered it.
func TestHiddenTakeoverForgedNotification(t *testing.T) { hideTakeover(t, forgeNotification) }

// TestHiddenTakeoverHeldOpen is attack (b). Before, the held id fell out of
// the listener's window and was given up (in both modes).
func TestHiddenTakeoverHeldOpen(t *testing.T) { hideTakeover(t, holdOpen) }

// TestHiddenTakeoverBoth: both at once, the forged notification sent after
// the window has gone by.
func TestHiddenTakeoverBoth(t *testing.T) {
	hideTakeover(t, func(t *testing.T, db pgtest.DB, s *data.Store, a *applied, h *pgtest.HiddenTakeover) {
		pgtest.BulkEvents(t, db, 1100)
		a.wait(t, "the silent marker after the bulk", pgtest.MarkerEvent(t, db, "silent", true))
		forgeNotification(t, db, s, a, h)
	})
}

// TestHiddenTakeoverAcrossListenerOutage: the takeover's transaction is
// open while the listener's connection is lost and cannot come back (its
// login refused) and 1100 other events commit; then the listener
// reconnects and the takeover commits. Before, the catch-up started over
// after the newest event on its new connection, 1100 past the held id.
func TestHiddenTakeoverAcrossListenerOutage(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s, admin := db.Store(t), db.Conn(t)
	dsn, role := pgtest.Login(t, db, "lease_reader")
	a := startApplied(t, s, FeedConfig{Listener: data.ListenerConfig{DSN: dsn}})
	a.wait(t, "the first marker", committedEvent(t, s, "marker-0"))

	h := openHiddenTakeover(t, db, s, data.Key{Account: "acme", Session: "hidden"})
	login := func(can bool) {
		t.Helper()
		stmt := "ALTER ROLE " + pgx.Identifier{role}.Sanitize() + " NOLOGIN"
		if can {
			stmt = "ALTER ROLE " + pgx.Identifier{role}.Sanitize() + " LOGIN"
		}
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	login(false)
	pgtest.Eventually(t, 15*time.Second, "the listener's backend gone", func() bool {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = $1`,
			role).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0 // none was left to terminate
	})
	pgtest.BulkEvents(t, db, 1100)
	login(true)
	a.wait(t, "the silent marker after the reconnection", pgtest.MarkerEvent(t, db, "marker-1", true))
	h.Commit(t)
	a.wait(t, "the hidden takeover", h.ID)
	a.wait(t, "the marker after the commit", committedEvent(t, s, "marker-2"))
	if n := a.count(h.ID); n != 1 {
		t.Errorf("the takeover %d was applied %d times, want once", h.ID, n)
	}
}

// TestAwaitingFeedKeepsLateEvents: while a resync is due (the consumer fell
// too far behind, or a read-back failed) the feed drops what the listener
// delivers, since the resync reads it. But the resync starts a window below
// the newest event delivered, and an event that committed long after its
// id was drawn (a transaction held open) is below it: the feed must queue
// it. Before, it dropped it, and nothing read it again.
func TestAwaitingFeedKeepsLateEvents(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	late := committedEvent(t, s, "late")
	f := NewFeed(s, FeedConfig{})
	f.synced, f.delivered, f.highest, f.awaitSync = true, 5000, 5000, true // the resync reads after 4000
	lis := s.NewListener(data.ListenerConfig{})

	f.receive(ctx, data.Delivery{Origin: data.FromPoll, Events: []data.Event{{ID: late, Kind: data.KindAcquired}, {ID: 4500, Kind: data.KindAcquired}}}, lis)
	if len(f.items) != 1 || f.items[0].Event == nil || f.items[0].Event.ID != late {
		t.Fatalf("polled rows queued while awaiting a resync: %+v, want only the late event %d", f.items, late)
	}
	f.items = nil

	// A notification of it, read back: queued; one above the resync's start
	// is left to the resync.
	f.receive(ctx, data.Delivery{Origin: data.FromNotify, Events: []data.Event{{ID: late, Kind: data.KindAcquired}}}, lis)
	f.receive(ctx, data.Delivery{Origin: data.FromNotify, Events: []data.Event{{ID: 4500, Kind: data.KindAcquired}}}, lis)
	if len(f.items) != 1 || f.items[0].Event == nil || f.items[0].Event.ID != late {
		t.Fatalf("notifications queued while awaiting a resync: %+v, want only the late event %d, read back", f.items, late)
	}
}

// TestOverflowKeepsLateEvents: when the consumer falls too far behind, the
// feed drops what it holds and owes it a resync from a window below the
// newest event delivered. An event below that window (its transaction was
// held open) must be kept: the resync would not read it.
func TestOverflowKeepsLateEvents(t *testing.T) {
	db := pgtest.New(t)
	f := NewFeed(db.Store(t), FeedConfig{MaxPending: 2})
	f.synced, f.delivered, f.highest = true, 5000, 5000 // the resync reads after 4000
	f.queue(context.Background(), []Item{
		{Event: &data.Event{ID: 5001}}, {Event: &data.Event{ID: 42}}, {Event: &data.Event{ID: 5002}},
	})
	if !f.awaitSync {
		t.Fatal("no resync owed after the overflow")
	}
	if len(f.items) != 1 || f.items[0].Event.ID != 42 {
		t.Fatalf("kept %+v after the overflow, want only the late event 42", f.items)
	}
}
