package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
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
// lease.event and delivered on Events. Without the catch-up it never
// arrives.
func TestCatchUpDeliversAnUnnotifiedTransition(t *testing.T) {
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	drain := collect(t, db.Conn(t), db.Conn(t))
	l := startListener(t, s, data.ListenerConfig{CatchUp: 20 * time.Millisecond})
	waitResync(t, l)

	k := data.Key{Account: "a", Session: "silent"}
	run := uuid.New()
	id := silentAcquire(t, conn, k, run)
	ev := waitEvent(t, l)
	if ev.ID != id || ev.Kind != data.KindAcquired || ev.Key != k || ev.RunID != data.PublicRunID(run) {
		t.Fatalf("event = %+v, want the silent acquire %d of %v", ev, id, k)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("the silent acquire sent notifications %q, want none", got)
	}
	if n := l.CaughtUp(); n != 1 {
		t.Errorf("CaughtUp() = %d, want 1", n)
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
	for {
		ev := waitEvent(t, l)
		seen[ev.ID]++
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
	if n := l.CaughtUp(); n != 1 {
		t.Errorf("CaughtUp() = %d, want 1 (the marker only)", n)
	}
}
