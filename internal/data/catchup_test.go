package data_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// silentAcquire acquires k for run in a transaction that opts out of the
// trigger's NOTIFY, as the Go library does, and sends no notification of its
// own: what a process that died between its commit and its notification
// leaves behind. It returns the event's id.
func silentAcquire(t *testing.T, conn *pgx.Conn, k data.Key, run uuid.UUID) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire($1, $2, $3, '1 minute', 'silent')`, k.Account, k.Session, run); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT max(id) FROM lease.event`).Scan(&id)
	})
	if err != nil {
		t.Fatalf("silent acquire of %v: %v", k, err)
	}
	return id
}

// TestCatchUpDeliversAnUnnotifiedTransition: a committed transition whose
// notification never comes reaches a listening listener anyway, read from
// lease.event and delivered in a FromCatchUp batch. Without the catch-up it
// never arrives.
func TestCatchUpDeliversAnUnnotifiedTransition(t *testing.T) {
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	drain := collect(t, db.Conn(t), db.Conn(t))
	l := startListener(t, s, data.ListenerConfig{CatchUp: 20 * time.Millisecond})
	waitResync(t, l)

	k := data.Key{Account: "a", Session: "silent"}
	run := uuid.New()
	id := silentAcquire(t, conn, k, run)
	ev, src := waitEventFrom(t, l)
	if ev.ID != id || ev.Kind != data.KindAcquired || ev.Key != k || ev.RunID != data.PublicRunID(run) {
		t.Fatalf("event = %+v, want the silent acquire %d of %v", ev, id, k)
	}
	if src != data.FromCatchUp {
		t.Errorf("source %v, want %v", src, data.FromCatchUp)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("the silent acquire sent notifications %q, want none", got)
	}
}

// TestCatchUpRepeatsNothingNotified: transitions whose notification came
// are not delivered a second time by the catch-up. A silent transition
// after them is the marker: once the catch-up delivered it, it has read
// every row before it.
func TestCatchUpRepeatsNothingNotified(t *testing.T) {
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	l := startListener(t, s, data.ListenerConfig{CatchUp: 10 * time.Millisecond})
	waitResync(t, l)

	ctx := context.Background()
	for i := range 20 {
		k := data.Key{Account: "a", Session: "s" + string(rune('a'+i))}
		run := uuid.New()
		mustAcquire(t, s, k, run, time.Minute)
		if _, err := s.Release(ctx, k, run); err != nil {
			t.Fatal(err)
		}
	}
	marker := silentAcquire(t, conn, data.Key{Account: "a", Session: "marker"}, uuid.New())
	seen := map[int64]int{}
	caught := 0
	for {
		ev, src := waitEventFrom(t, l)
		seen[ev.ID]++
		if src == data.FromCatchUp {
			caught++
		}
		if ev.ID == marker {
			break
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %d delivered %d times, want once", id, n)
		}
	}
	if len(seen) != 41 {
		t.Errorf("delivered %d events, want 41 (20 acquired, 20 released, the marker)", len(seen))
	}
	if caught != 1 {
		t.Errorf("the catch-up delivered %d events, want 1 (the marker only)", caught)
	}
}

// TestCatchUpWaitsForRoom: a row the catch-up reads while the consumer is
// behind (no room) is not dropped like a notification: the resync a drop
// causes re-reads only a window below the newest event, and the row may lie
// far below it (its transaction was held open). The catch-up keeps it and
// delivers it once there is room, with no resync in between.
func TestCatchUpWaitsForRoom(t *testing.T) {
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	l := startListener(t, s, data.ListenerConfig{Buffer: 1, CatchUp: 10 * time.Millisecond})
	waitResync(t, l)

	first := silentAcquire(t, conn, data.Key{Account: "a", Session: "first"}, uuid.New())
	second := silentAcquire(t, conn, data.Key{Account: "a", Session: "second"}, uuid.New())
	for _, want := range []int64{first, second} {
		it := l.next(t)
		if it.resync || it.ev.ID != want || it.src != data.FromCatchUp {
			t.Fatalf("delivered %+v, want row %d from the catch-up", it, want)
		}
	}
	if d := l.Dropped(); d != 0 {
		t.Errorf("Dropped() = %d, want 0", d)
	}
}

// TestMissingLetsTheCatchUpDeliver: a notification naming a transition
// before it commits (anyone may NOTIFY; the transition's own transaction
// opted out of the trigger's) is delivered, and its consumer finds no row.
// Once the consumer reports the id Missing, the catch-up delivers the row
// when it commits; before Missing existed, the catch-up skipped it as
// heard.
func TestMissingLetsTheCatchUpDeliver(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn, other := db.Store(t), db.Conn(t), db.Conn(t)
	l := startListener(t, s, data.ListenerConfig{CatchUp: 10 * time.Millisecond})
	waitResync(t, l)

	k, run := data.Key{Account: "a", Session: "early"}, uuid.New()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
		t.Fatal(err)
	}
	var id int64
	if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire($1, $2, $3, '1 minute', 'early')`, k.Account, k.Session, run); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT max(id) FROM lease.event`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	payload := fmt.Sprintf(`{"id":%d,"kind":"acquired","account_id":"a","session_id":"early","run_id":"%s"}`, id, data.PublicRunID(run))
	if _, err := other.Exec(ctx, `SELECT pg_notify('lease_events', $1)`, payload); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, l); ev.ID != id {
		t.Fatalf("event %d, want the early notification of %d", ev.ID, id)
	}
	if rows, err := s.EventsByID(ctx, []int64{id}); err != nil || len(rows) != 0 {
		t.Fatalf("read back %v (%v), want no row before the commit", rows, err)
	}
	l.Missing([]int64{id})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, l); ev.ID != id || ev.Key != k {
		t.Fatalf("event %+v, want the committed row %d", ev, id)
	}
}
