package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestQueueSquatterHoldsAtMostItsShare is queue squatting, as the
// attacker: a lease_app login takes tickets in a held session's queue
// until it is refused, and renews them. It gets QueueShare of them, not the
// whole queue: its next one is refused with ErrQueueShareFull and writes
// nothing, and another lease_app login still takes a ticket. An operator
// (lease_admin) then clears the squatter's head ticket, then the whole
// queue, each recorded as queue_left with the operator's login and reason;
// a cleared run's renewals are refused with ErrTicketCleared (it cannot
// join again at the tail), and the other login acquires the free lease.
// The squatter connects directly and through PgBouncer in transaction mode.
func TestQueueSquatterHoldsAtMostItsShare(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"direct", "pooler"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			testQueueSquatter(t, path == "pooler")
		})
	}
}

func testQueueSquatter(t *testing.T, pooled bool) {
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	k := data.Key{Account: "victim", Session: "chat"}
	victimDSN, _ := pgtest.Login(t, db, "lease_app")
	squatterDSN, squatter := pgtest.Login(t, db, "lease_app")
	otherDSN, other := pgtest.Login(t, db, "lease_app")
	adminDSN, admin := pgtest.Login(t, db, "lease_admin")
	if pooled {
		u, err := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}).Via(squatterDSN)
		if err != nil {
			t.Fatal(err)
		}
		squatterDSN = u
	}
	victimS := pgtest.OpenStore(t, victimDSN, data.Options{})
	squatS := pgtest.OpenStore(t, squatterDSN, data.Options{})
	otherS := pgtest.OpenStore(t, otherDSN, data.Options{})
	adminS := pgtest.OpenStore(t, adminDSN, data.Options{})

	holder := uuid.New()
	mustAcquire(t, victimS, k, holder, time.Hour)

	// The squatter takes every ticket it can.
	var runs []uuid.UUID
	for range data.QueueLimit {
		r := uuid.New()
		p, err := squatS.Enqueue(ctx, k, r, time.Hour, "squat")
		if err != nil {
			if !errors.Is(err, data.ErrQueueShareFull) || !errors.Is(err, data.ErrQueueFull) || !strings.Contains(err.Error(), squatter) {
				t.Fatalf("squatter's ticket %d: %v, want ErrQueueShareFull naming its login %s", len(runs), err, squatter)
			}
			break
		}
		if !p.Ticketed() || p.Ahead != len(runs) {
			t.Fatalf("squatter's ticket %d: place %+v", len(runs), p)
		}
		runs = append(runs, r)
	}
	if len(runs) != data.QueueShare {
		t.Fatalf("the squatter took %d tickets, want its share %d", len(runs), data.QueueShare)
	}
	before := len(events(t, owner))
	if _, err := squatS.Enqueue(ctx, k, uuid.New(), time.Hour, "squat"); !errors.Is(err, data.ErrQueueShareFull) {
		t.Fatalf("squatter's ticket past its share: %v, want ErrQueueShareFull", err)
	}
	if n := len(events(t, owner)); n != before {
		t.Fatalf("a refused ticket wrote %d events", n-before)
	}
	for _, r := range runs { // renewing its own tickets is still allowed
		if _, err := squatS.Enqueue(ctx, k, r, time.Hour, "squat"); err != nil {
			t.Fatalf("squatter's renewal: %v", err)
		}
	}

	// Another login still queues.
	waiter := uuid.New()
	p, err := otherS.Enqueue(ctx, k, waiter, time.Hour, "other")
	if err != nil || p.Ahead != data.QueueShare {
		t.Fatalf("another login's Enqueue = %+v, %v; want a ticket behind the squatter's %d", p, err, data.QueueShare)
	}
	q, err := otherS.QueueOf(ctx, k)
	if err != nil || len(q) != data.QueueShare+1 || q[0].Login != squatter || q[len(q)-1].Login != other {
		t.Fatalf("QueueOf = %d tickets, %v; want the squatter's (login %s) then the other login's (%s)", len(q), err, squatter, other)
	}

	// The lease is released; the squatter's head holds the queue.
	if _, err := victimS.Release(ctx, k, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := otherS.Acquire(ctx, k, waiter, time.Hour, "other"); !errors.Is(err, data.ErrHeld) {
		t.Fatalf("the other login's Acquire behind the squatter: %v, want ErrHeld", err)
	}

	// Neither an app login nor a reader may clear.
	readerS := pgtest.OpenStore(t, db.ReaderURL(t), data.Options{})
	for name, s := range map[string]*data.Store{"lease_app": squatS, "lease_reader": readerS} {
		if _, err := s.ClearQueue(ctx, k, "mine"); !errors.Is(err, data.ErrPermission) {
			t.Errorf("ClearQueue as %s: %v, want ErrPermission", name, err)
		}
	}

	// The operator clears the head ticket: it is recorded, and the run
	// cannot take it again.
	ok, err := adminS.ClearTicket(ctx, k, data.PublicRunID(runs[0]), "squatting, INC-9")
	if err != nil || !ok {
		t.Fatalf("ClearTicket(head) = %v, %v; want true", ok, err)
	}
	last := lastEvent(t, owner, k)
	if last.Kind != data.KindQueueLeft || last.RunID != data.PublicRunID(runs[0]) || last.Actor != admin || last.Reason != "cleared: squatting, INC-9" {
		t.Fatalf("event after ClearTicket = %s run %v by %q (%q); want queue_left of the head by %s, reason \"cleared: squatting, INC-9\"",
			last.Kind, last.RunID, last.Actor, last.Reason, admin)
	}
	if _, err := squatS.Enqueue(ctx, k, runs[0], time.Hour, "squat"); !errors.Is(err, data.ErrTicketCleared) || !strings.Contains(err.Error(), admin) {
		t.Fatalf("the cleared run's Enqueue: %v, want ErrTicketCleared naming %s", err, admin)
	}
	if _, err := squatS.RenewTicket(ctx, k, runs[0], time.Hour); !errors.Is(err, data.ErrTicketCleared) {
		t.Fatalf("the cleared run's RenewTicket: %v, want ErrTicketCleared", err)
	}
	if ok, err := adminS.ClearTicket(ctx, k, data.PublicRunID(runs[0]), "again"); err != nil || ok {
		t.Fatalf("ClearTicket of a cleared ticket = %v, %v; want false", ok, err)
	}

	// Then the whole queue: every ticket, one event each.
	n, err := adminS.ClearQueue(ctx, k, "INC-9")
	if err != nil || n != data.QueueShare {
		t.Fatalf("ClearQueue = %d, %v; want %d (the squatter's other tickets and the other login's)", n, err, data.QueueShare)
	}
	cleared := 0
	for _, e := range events(t, owner) {
		if e.Key == k && e.Kind == data.KindQueueLeft && e.Reason == "cleared: INC-9" && e.Actor == admin {
			cleared++
		}
	}
	if cleared != data.QueueShare {
		t.Fatalf("%d queue_left events cleared by %s, want %d", cleared, admin, data.QueueShare)
	}
	for _, r := range runs[1:] {
		if _, err := squatS.Enqueue(ctx, k, r, time.Hour, "squat"); !errors.Is(err, data.ErrTicketCleared) {
			t.Fatalf("a cleared squatter run's renewal: %v, want ErrTicketCleared", err)
		}
	}
	if q, err := owner.QueueOf(ctx, k); err != nil || len(q) != 0 {
		t.Fatalf("queue after ClearQueue: %d tickets, %v; want none", len(q), err)
	}
	if _, err := otherS.Acquire(ctx, k, waiter, time.Hour, "other"); err != nil {
		t.Fatalf("the other login's Acquire after the clear: %v", err)
	}
}

// lastEvent returns key's newest event.
func lastEvent(t *testing.T, s *data.Store, k data.Key) data.Event {
	t.Helper()
	evs, err := s.EventsFor(context.Background(), k, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("EventsFor(%v) = %v, %v", k, evs, err)
	}
	return evs[0]
}
