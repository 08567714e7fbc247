package data_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// acmeKey is session chat-n of account acme.
func acmeKey(n int) data.Key { return data.Key{Account: "acme", Session: fmt.Sprintf("chat-%d", n)} }

// queueForSlot has run take a ticket on k and be refused for its account's
// limit, which puts the ticket in the account's queue, and returns the
// ticket's place.
func queueForSlot(t *testing.T, s *data.Store, k data.Key, run uuid.UUID, ttl time.Duration) data.Place {
	t.Helper()
	ctx := context.Background()
	p, err := s.Enqueue(ctx, k, run, ttl, "waiter")
	if err != nil || !p.Ticketed() {
		t.Fatalf("Enqueue(%s) in a full account = %+v, %v, want a ticket", k, p, err)
	}
	if _, err := s.Acquire(ctx, k, run, time.Hour, "waiter"); !errors.Is(err, data.ErrAtLimit) {
		t.Fatalf("Acquire(%s) in a full account = %v, want ErrAtLimit", k, err)
	}
	p, err = s.Enqueue(ctx, k, run, ttl, "waiter")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLimitQueueOldestWaiterFirst: a run refused for its account's limit
// that holds a ticket waits in the account's queue. When a slot frees it
// goes to the oldest live ticket: a newer queued run and a run without a
// ticket are refused, with a *LimitError counting the runs queued before
// them, although a slot is free; the grant ends the ticket (queue_left,
// granted). A limited account with a free slot and nobody waiting queues
// nobody.
func TestLimitQueueOldestWaiterFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := s.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Enqueue(ctx, acmeKey(0), uuid.New(), time.Minute, "x"); err != nil || p.Ticketed() {
		t.Fatalf("Enqueue with a free slot and no waiter = %+v, %v, want no ticket (acquire)", p, err)
	}
	h, a, b, c := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	mustAcquire(t, s, acmeKey(0), h, time.Hour)
	if p := queueForSlot(t, s, acmeKey(1), a, time.Minute); p.Ahead != 0 {
		t.Fatalf("first waiter's place: %d ahead, want 0", p.Ahead)
	}
	if p := queueForSlot(t, s, acmeKey(2), b, time.Minute); p.Ahead != 1 {
		t.Fatalf("second waiter's place: %d ahead, want 1 (the first waiter, in another session)", p.Ahead)
	}
	if _, err := s.Release(ctx, acmeKey(0), h); err != nil {
		t.Fatal(err)
	}
	var le *data.LimitError
	if _, err := s.Acquire(ctx, acmeKey(3), c, time.Hour, "jumper"); !errors.As(err, &le) || le.Queued != 2 {
		t.Fatalf("an acquire without a ticket while two wait for the free slot: %v, want a *LimitError with Queued 2", err)
	}
	if _, err := s.Acquire(ctx, acmeKey(2), b, time.Hour, "waiter"); !errors.As(err, &le) || le.Queued != 1 {
		t.Fatalf("the second waiter before the first: %v, want a *LimitError with Queued 1", err)
	}
	if _, err := s.Acquire(ctx, acmeKey(1), a, time.Hour, "waiter"); err != nil {
		t.Fatalf("the first waiter: %v, want the free slot", err)
	}
	if _, err := s.Release(ctx, acmeKey(1), a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, acmeKey(3), c, time.Hour, "jumper"); !errors.Is(err, data.ErrAtLimit) {
		t.Fatalf("an acquire without a ticket while one waits: %v, want ErrAtLimit", err)
	}
	if _, err := s.Acquire(ctx, acmeKey(2), b, time.Hour, "waiter"); err != nil {
		t.Fatalf("the second waiter, now the oldest: %v, want the free slot", err)
	}
	var granted int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.event
		WHERE kind = 'queue_left' AND reason = 'granted' AND session_id IN ('chat-1', 'chat-2')`).Scan(&granted); err != nil {
		t.Fatal(err)
	}
	if granted != 2 {
		t.Fatalf("queue_left granted events: %d, want 2", granted)
	}
}

// TestLimitQueueDeadWaiterExpires: a waiter of the account's queue that
// stops renewing its ticket holds the free slot only until its ticket
// expires; then the next waiter gets it, and the next enqueue in the account
// ends the dead ticket with a queue_left event (reason expired), though
// nobody touches its session.
func TestLimitQueueDeadWaiterExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := s.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	h, dead, live := uuid.New(), uuid.New(), uuid.New()
	mustAcquire(t, s, acmeKey(0), h, time.Hour)
	pd := queueForSlot(t, s, acmeKey(1), dead, 2*time.Second)
	queueForSlot(t, s, acmeKey(2), live, time.Minute)
	if _, err := s.Release(ctx, acmeKey(0), h); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, acmeKey(2), live, time.Hour, "waiter"); err == nil {
		var at time.Time
		if err := db.Conn(t).QueryRow(ctx, `SELECT acquired_at FROM lease.session_lease WHERE session_id = 'chat-2'`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if at.Before(pd.ExpiresAt) {
			t.Fatalf("the live waiter was granted at %v, before the dead ticket's expiry %v", at, pd.ExpiresAt)
		}
	} else if !errors.Is(err, data.ErrAtLimit) {
		t.Fatalf("the live waiter behind a dead one: %v, want ErrAtLimit", err)
	}
	pgtest.WaitServerPast(t, db.Pool(t), pd.ExpiresAt)
	if _, err := s.Acquire(ctx, acmeKey(2), live, time.Hour, "waiter"); err != nil {
		t.Fatalf("the live waiter after the dead ticket expired: %v", err)
	}
	if _, err := s.Enqueue(ctx, acmeKey(5), uuid.New(), time.Minute, "later"); err != nil {
		t.Fatal(err)
	}
	var expired int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.event
		WHERE kind = 'queue_left' AND reason = 'expired' AND session_id = 'chat-1'`).Scan(&expired); err != nil {
		t.Fatal(err)
	}
	if expired != 1 {
		t.Fatalf("queue_left expired events of the dead waiter: %d, want 1", expired)
	}
}

// TestLimitQueueMigrateFromVersion6: a version-6 database with a live
// ticket migrates in place (twice: idempotent); the ticket is kept, waits
// for no slot, and is renewed and granted as before; the account's queue
// works on the migrated table.
func TestLimitQueueMigrateFromVersion6(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewAtVersion(t, 6)
	conn := db.Conn(t)
	holder, waiter := uuid.New(), uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.acquire('acme', 'chat-0', $1, '1 hour', 'desktop')`, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT lease.enqueue('acme', 'chat-0', $1, '1 hour', 'phone')`, waiter); err != nil {
		t.Fatalf("version 6 enqueue: %v", err)
	}
	for i := range 2 {
		if _, err := data.MigrateWith(ctx, conn, data.MigrateOptions{}); err != nil {
			t.Fatalf("Migrate #%d from version 6: %v", i+1, err)
		}
	}
	s := db.Store(t)
	var forSlot bool
	if err := conn.QueryRow(ctx, `SELECT for_slot FROM lease.queue_ticket WHERE session_id = 'chat-0'`).Scan(&forSlot); err != nil || forSlot {
		t.Fatalf("the version-6 ticket after migrate: for_slot %v, %v; want kept, waiting for no slot", forSlot, err)
	}
	if p, err := s.RenewTicket(ctx, acmeKey(0), waiter, time.Hour); err != nil || p.Ahead != 0 {
		t.Fatalf("renew the version-6 ticket: %+v, %v", p, err)
	}
	if _, err := s.Release(ctx, acmeKey(0), holder); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, acmeKey(0), waiter, time.Hour, "phone"); err != nil {
		t.Fatalf("the version-6 ticket's run: %v, want the lease", err)
	}
	if _, err := s.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	queueForSlot(t, s, acmeKey(1), uuid.New(), time.Minute)
	if _, err := s.Acquire(ctx, acmeKey(2), uuid.New(), time.Hour, "x"); !errors.Is(err, data.ErrAtLimit) {
		t.Fatalf("a third run: %v, want ErrAtLimit", err)
	}
}
