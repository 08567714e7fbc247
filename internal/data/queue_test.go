package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// countKinds counts the events of kind k on key.
func countKinds(evs []data.Event, key data.Key, k data.Kind) int {
	n := 0
	for _, e := range evs {
		if e.Key == key && e.Kind == k {
			n++
		}
	}
	return n
}

// TestQueueRefusesAJumperWithItsPlace: while the queue holds a live ticket,
// a Try by a run without the head ticket is refused even on a free lease,
// with its place; the head's acquire succeeds and ends its ticket; the next
// ticket is the head then.
// Directly and through PgBouncer in transaction mode.
func TestQueueRefusesAJumperWithItsPlace(t *testing.T) {
	t.Parallel()
	eachConnection(t, testQueueRefusesAJumper)
}

func testQueueRefusesAJumper(t *testing.T, _ pgtest.DB, s *data.Store) {
	ctx := context.Background()
	k := data.Key{Account: "a", Session: "q"}
	holder, first, second, jumper := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	mustAcquire(t, s, k, holder, time.Minute)

	p1, err := s.Enqueue(ctx, k, first, time.Minute, "first")
	if err != nil || p1.Ahead != 0 || !p1.Ticketed() {
		t.Fatalf("Enqueue(first) = %+v, %v; want ahead 0 with a ticket", p1, err)
	}
	p2, err := s.Enqueue(ctx, k, second, time.Minute, "second")
	if err != nil || p2.Ahead != 1 || !p2.Ticketed() || p2.AheadExpiresAt.IsZero() {
		t.Fatalf("Enqueue(second) = %+v, %v; want ahead 1 with a ticket", p2, err)
	}
	if _, err := s.Release(ctx, k, holder); err != nil {
		t.Fatal(err)
	}

	_, err = s.Acquire(ctx, k, jumper, time.Minute, "jumper")
	var held *data.HeldError
	if !errors.As(err, &held) || held.Queued != 2 || held.RunID != uuid.Nil {
		t.Fatalf("jumper's Acquire of a free lease with a queue: err = %v, want a HeldError with Queued 2 and no holder", err)
	}
	_, err = s.Acquire(ctx, k, second, time.Minute, "second")
	if !errors.As(err, &held) || held.Queued != 1 {
		t.Fatalf("second's Acquire before its turn: err = %v, want a HeldError with Queued 1", err)
	}
	if _, err := s.Acquire(ctx, k, first, time.Minute, "first"); err != nil {
		t.Fatalf("head's Acquire: %v", err)
	}
	q, err := s.QueueOf(ctx, k)
	if err != nil || len(q) != 1 || q[0].RunID != data.PublicRunID(second) || q[0].Holder != "second" {
		t.Fatalf("QueueOf after the head's grant = %+v, %v; want second alone", q, err)
	}
	if _, err := s.Acquire(ctx, k, jumper, time.Minute, "jumper"); !errors.As(err, &held) || held.Queued != 1 ||
		held.RunID != data.PublicRunID(first) {
		t.Fatalf("jumper while first holds: err = %v, want held by first with Queued 1", err)
	}
	evs := events(t, s)
	if j, l := countKinds(evs, k, data.KindQueueJoined), countKinds(evs, k, data.KindQueueLeft); j != 2 || l != 1 {
		t.Fatalf("queue events: %d joined, %d left; want 2 and 1", j, l)
	}
}

// TestQueueRenewalsAndRepeatsWriteNothing: a ticket renewed or taken again
// while it lives writes no event; a run that cannot compete (the key free
// without a queue, or its own holder) takes no ticket and writes nothing.
func TestQueueRenewalsAndRepeatsWriteNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "a", Session: "r"}
	holder, w := uuid.New(), uuid.New()

	if p, err := s.Enqueue(ctx, k, w, time.Minute, "w"); err != nil || p.Ticketed() {
		t.Fatalf("Enqueue on a free key without a queue = %+v, %v; want no ticket", p, err)
	}
	mustAcquire(t, s, k, holder, time.Minute)
	if p, err := s.Enqueue(ctx, k, holder, time.Minute, "h"); err != nil || p.Ticketed() {
		t.Fatalf("Enqueue by the holder = %+v, %v; want no ticket", p, err)
	}
	before := len(events(t, s))
	if _, err := s.Enqueue(ctx, k, w, time.Minute, "w"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := s.Enqueue(ctx, k, w, time.Minute, "w"); err != nil {
			t.Fatal(err)
		}
		if p, err := s.RenewTicket(ctx, k, w, time.Minute); err != nil || p.Ahead != 0 {
			t.Fatalf("RenewTicket = %+v, %v", p, err)
		}
	}
	if n := len(events(t, s)) - before; n != 1 {
		t.Fatalf("one ticket taken, renewed and taken again 10 times wrote %d events, want 1", n)
	}
	if _, err := s.RenewTicket(ctx, k, uuid.New(), time.Minute); !errors.Is(err, data.ErrNotHeld) {
		t.Fatalf("RenewTicket of a stranger: %v, want ErrNotHeld", err)
	}
}

// TestQueueFullRefusesAndWritesNothing: the 65th ticket is refused with
// ErrQueueFull and neither a ticket nor an event is written. Two logins
// fill the queue, each its share; a third login is refused because the
// queue is full, not for its share.
func TestQueueFullRefusesAndWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "a", Session: "full"}
	mustAcquire(t, s, k, uuid.New(), time.Minute)
	var logins []*data.Store
	for range 3 {
		dsn, _ := pgtest.Login(t, db, "lease_app")
		logins = append(logins, pgtest.OpenStore(t, dsn, data.Options{}))
	}
	for i := range data.QueueLimit {
		if p, err := logins[i/data.QueueShare].Enqueue(ctx, k, uuid.New(), time.Minute, ""); err != nil || p.Ahead != i {
			t.Fatalf("ticket %d: %+v, %v", i, p, err)
		}
	}
	before := len(events(t, s))
	_, err := logins[2].Enqueue(ctx, k, uuid.New(), time.Minute, "")
	if !errors.Is(err, data.ErrQueueFull) || errors.Is(err, data.ErrQueueShareFull) {
		t.Fatalf("ticket %d: %v, want ErrQueueFull (not the login's share)", data.QueueLimit+1, err)
	}
	if n := len(events(t, s)); n != before {
		t.Fatalf("a refused ticket wrote %d events", n-before)
	}
	if q, _ := s.QueueOf(ctx, k); len(q) != data.QueueLimit {
		t.Fatalf("queue length after the refusal = %d, want %d", len(q), data.QueueLimit)
	}
}

// TestQueueCancelPromotesAndNotifies: cancelling the head ticket makes the
// next one the head at once, and a listener hears queue_left for the key.
func TestQueueCancelPromotesAndNotifies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "a", Session: "c"}
	a, b := uuid.New(), uuid.New()
	mustAcquire(t, s, k, uuid.New(), time.Minute)
	for _, r := range []uuid.UUID{a, b} {
		if _, err := s.Enqueue(ctx, k, r, time.Minute, ""); err != nil {
			t.Fatal(err)
		}
	}
	ln := s.NewListener(data.ListenerConfig{})
	go func() { _ = ln.Run(ctx) }()
	select {
	case b := <-ln.Deliveries(): // the first is the resync marker: listening
		if !b.Resync {
			t.Fatalf("first batch %+v, want the resync marker", b)
		}
	case <-ctx.Done():
		t.Fatal("listener never connected")
	}
	if ok, err := s.CancelTicket(ctx, k, a); err != nil || !ok {
		t.Fatalf("CancelTicket = %v, %v", ok, err)
	}
	if p, err := s.RenewTicket(ctx, k, b, time.Minute); err != nil || p.Ahead != 0 {
		t.Fatalf("b's place after a's cancel = %+v, %v; want the head", p, err)
	}
	for {
		select {
		case b := <-ln.Deliveries():
			for _, ev := range b.Events {
				if b.Origin == data.FromNotify && ev.Kind == data.KindQueueLeft && ev.Key == k &&
					ev.RunID == data.PublicRunID(a) && ev.Reason == "cancelled" {
					return
				}
			}
		case <-ctx.Done():
			t.Fatal("no queue_left notification for the cancelled ticket")
		}
	}
}

// TestQueueDeadTicketIsSkippedOnceExpired: a ticket nobody renews blocks
// the one behind it until its expiry on the database clock, and no longer.
func TestQueueDeadTicketIsSkippedOnceExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "a", Session: "dead"}
	dead, live := uuid.New(), uuid.New()
	holder := uuid.New()
	mustAcquire(t, s, k, holder, time.Minute)
	pd, err := s.Enqueue(ctx, k, dead, 2*time.Second, "dead")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, k, live, time.Minute, "live"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, k, holder); err != nil {
		t.Fatal(err)
	}
	pool := db.Pool(t)
	// Before the dead ticket's expiry the live one is refused; a grant, if
	// the machine was slow enough, must be dated after that expiry.
	grantedAt := func() time.Time {
		var at time.Time
		if err := pool.QueryRow(ctx, `SELECT acquired_at FROM lease.session_lease WHERE account_id = $1 AND session_id = $2`,
			k.Account, k.Session).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	_, err = s.Acquire(ctx, k, live, time.Minute, "live")
	if err == nil {
		if at := grantedAt(); at.Before(pd.ExpiresAt) {
			t.Fatalf("live was granted at %v, before the dead ticket's expiry %v", at, pd.ExpiresAt)
		}
		return
	}
	if !errors.Is(err, data.ErrHeld) {
		t.Fatalf("live's Acquire behind the dead ticket: %v, want ErrHeld", err)
	}
	pgtest.WaitServerPast(t, pool, pd.ExpiresAt)
	if _, err := s.Acquire(ctx, k, live, time.Minute, "live"); err != nil {
		t.Fatalf("live's Acquire after the dead ticket expired: %v", err)
	}
	if at := grantedAt(); at.Before(pd.ExpiresAt) {
		t.Fatalf("live was granted at %v, before the dead ticket's expiry %v", at, pd.ExpiresAt)
	}
}

// TestQueueReaderReadsButCannotEnqueue: a lease_reader reads the queue (public
// run ids only) and may not take, renew or cancel a ticket.
func TestQueueReaderReadsButCannotEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "a", Session: "ro"}
	w := uuid.New()
	mustAcquire(t, s, k, uuid.New(), time.Minute)
	if _, err := s.Enqueue(ctx, k, w, time.Minute, "w"); err != nil {
		t.Fatal(err)
	}
	reader := pgtest.OpenStore(t, db.ReaderURL(t), data.Options{})
	q, err := reader.QueueOf(ctx, k)
	if err != nil || len(q) != 1 || q[0].RunID != data.PublicRunID(w) {
		t.Fatalf("reader's QueueOf = %+v, %v; want w's public id", q, err)
	}
	if n, err := reader.QueueLengths(ctx); err != nil || n[k] != 1 {
		t.Fatalf("reader's QueueLengths = %v, %v", n, err)
	}
	if _, err := reader.Enqueue(ctx, k, uuid.New(), time.Minute, ""); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("reader's Enqueue: %v, want ErrPermission", err)
	}
	if _, err := reader.RenewTicket(ctx, k, w, time.Minute); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("reader's RenewTicket: %v, want ErrPermission", err)
	}
	if _, err := reader.CancelTicket(ctx, k, w); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("reader's CancelTicket: %v, want ErrPermission", err)
	}
}

// TestQueueExpiredTicketLeavesAtTheNextTouch: a ticket
// nobody renews leaves with its queue_left event (reason expired, its
// expiry) at the next touch of its queue, not only when a new ticket is
// taken: a live waiter's renewal (Enqueue, RenewTicket) records it, and so
// does a grant of the lease when the dead ticket is the only one left.
func TestQueueExpiredTicketLeavesAtTheNextTouch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	pool := db.Pool(t)
	left := func(k data.Key, run uuid.UUID) []data.Event {
		var out []data.Event
		for _, e := range events(t, s) {
			if e.Key == k && e.Kind == data.KindQueueLeft && e.RunID == data.PublicRunID(run) {
				out = append(out, e)
			}
		}
		return out
	}
	renewals := map[string]func(k data.Key, run uuid.UUID) error{
		"Enqueue": func(k data.Key, run uuid.UUID) error {
			_, err := s.Enqueue(ctx, k, run, time.Minute, "live")
			return err
		},
		"RenewTicket": func(k data.Key, run uuid.UUID) error {
			_, err := s.RenewTicket(ctx, k, run, time.Minute)
			return err
		},
	}
	for name, renew := range renewals {
		k := data.Key{Account: "a", Session: "renewed-by-" + name}
		mustAcquire(t, s, k, uuid.New(), time.Hour)
		dead, live := uuid.New(), uuid.New()
		pd, err := s.Enqueue(ctx, k, dead, time.Second, "dead")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Enqueue(ctx, k, live, time.Minute, "live"); err != nil {
			t.Fatal(err)
		}
		pgtest.WaitServerPast(t, pool, pd.ExpiresAt)
		if got := left(k, dead); len(got) != 0 {
			t.Fatalf("%s: the dead ticket left before anyone touched the queue: %+v", name, got)
		}
		if err := renew(k, live); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := left(k, dead)
		if len(got) != 1 || got[0].Reason != "expired" || !got[0].ExpiresAt.Equal(pd.ExpiresAt) {
			t.Fatalf("after the live waiter's %s, the dead ticket's queue_left events = %+v; want one, reason expired, expiry %v",
				name, got, pd.ExpiresAt)
		}
	}

	k := data.Key{Account: "a", Session: "granted"}
	holder, dead := uuid.New(), uuid.New()
	mustAcquire(t, s, k, holder, time.Hour)
	pd, err := s.Enqueue(ctx, k, dead, time.Second, "dead")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, k, holder); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitServerPast(t, pool, pd.ExpiresAt)
	mustAcquire(t, s, k, uuid.New(), time.Minute)
	if got := left(k, dead); len(got) != 1 || got[0].Reason != "expired" {
		t.Fatalf("after a grant, the dead ticket's queue_left events = %+v; want one, reason expired", got)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM lease.queue_ticket WHERE account_id = $1 AND session_id = $2`,
		k.Account, k.Session).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d ticket rows left (%v), want none", rows, err)
	}
}
