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

// TestHandOverCarriesTheAskersDeclaration: the lease a hand-over moves
// says what its new holder declared in its ask, not what the old holder
// did, both ways: a preemptible holder with an attachment hands over to a
// not-preemptible asker with its own attachment (a preempt is then refused,
// and a device that joins reads the new attachment), and to an asker that
// declares nothing (the old attachment is gone, the lease preemptible).
func TestHandOverCarriesTheAskersDeclaration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	tests := []struct {
		name string
		ask  data.AcquireOptions
	}{
		{"to a payment", data.AcquireOptions{NotPreemptible: true, Attachment: "pay-stream"}},
		{"to a plain asker", data.AcquireOptions{}},
	}
	for i, tc := range tests {
		k := data.Key{Account: "acme", Session: "chat-" + string(rune('a'+i))}
		holder, asker := uuid.New(), uuid.New()
		if _, err := s.AcquireWith(ctx, k, holder, time.Hour, "desktop", data.AcquireOptions{Attachment: "stream-desk"}); err != nil {
			t.Fatal(err)
		}
		if a, err := s.AskHandoverWith(ctx, k, asker, time.Hour, "phone", tc.ask); err != nil || a.Outcome != data.AskAsked {
			t.Fatalf("%s: AskHandoverWith = %+v, %v; want asked", tc.name, a, err)
		}
		if h, err := s.HandOver(ctx, k, holder, time.Minute); err != nil || h.Outcome != data.AskHandedOver {
			t.Fatalf("%s: HandOver = %+v, %v; want handed_over", tc.name, h, err)
		}
		l, _, ok, err := s.Lease(ctx, k)
		if err != nil || !ok || l.RunID != data.PublicRunID(asker) {
			t.Fatalf("%s: lease after the hand-over = %+v (%v, %v), want the asker's", tc.name, l, ok, err)
		}
		if l.NotPreemptible != tc.ask.NotPreemptible || l.Attachment != tc.ask.Attachment {
			t.Errorf("%s: the lease says not preemptible %v, attachment %q; the asker declared %v, %q",
				tc.name, l.NotPreemptible, l.Attachment, tc.ask.NotPreemptible, tc.ask.Attachment)
		}
		_, err = s.Acquire(ctx, k, uuid.New(), time.Minute, "tablet")
		var held *data.HeldError
		if !errors.As(err, &held) || held.Attachment != tc.ask.Attachment || held.Preemptible == tc.ask.NotPreemptible {
			t.Errorf("%s: a joiner's refusal = %v (%+v), want the new holder's attachment %q and preemptible %v",
				tc.name, err, held, tc.ask.Attachment, !tc.ask.NotPreemptible)
		}
		_, err = s.Preempt(ctx, k, uuid.New(), time.Minute, "tablet", "test", data.AcquireOptions{})
		if got := errors.Is(err, data.ErrNotPreemptible); got != tc.ask.NotPreemptible {
			t.Errorf("%s: Preempt after the hand-over = %v; refused as not preemptible %v, want %v", tc.name, err, got, tc.ask.NotPreemptible)
		}
	}
}

// TestAskOfNotPreemptibleHolderIsRefused: a holder that declared itself not
// preemptible cannot be asked to hand over either: the ask is refused at
// once (AskNotPreemptible, naming the holder and its fence), nothing is
// written, and the holder keeps its lease; a plain Acquire after it sees no
// pending ask.
func TestAskOfNotPreemptibleHolderIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	appDSN, _ := pgtest.Login(t, db, "lease_app")
	app := pgtest.OpenStore(t, appDSN, data.Options{})
	k := data.Key{Account: "acme", Session: "payment"}
	holder := uuid.New()
	g, err := s.AcquireWith(ctx, k, holder, time.Hour, "checkout", data.AcquireOptions{NotPreemptible: true})
	if err != nil {
		t.Fatal(err)
	}
	before := len(keyEvents(t, s, k))
	a, err := app.AskHandover(ctx, k, uuid.New(), time.Hour, "phone")
	if err != nil || a.Outcome != data.AskNotPreemptible || a.Ask.HolderRunID != data.PublicRunID(holder) || a.Fence != g.Fence {
		t.Fatalf("AskHandover of a not-preemptible holder = %+v, %v; want not_preemptible naming run %s fence %d",
			a, err, data.PublicRunID(holder), g.Fence)
	}
	if after := keyEvents(t, s, k); len(after) != before {
		t.Errorf("the refused ask wrote %v", kinds(after[before:]))
	}
	if p, err := s.PendingAsk(ctx, k); err != nil || p != nil {
		t.Errorf("PendingAsk after the refusal = %+v, %v; want none", p, err)
	}
	if l, _, ok, err := s.Lease(ctx, k); err != nil || !ok || l.RunID != data.PublicRunID(holder) || l.Fence != g.Fence {
		t.Errorf("lease after the refused ask = %+v (%v, %v), want the holder's with fence %d", l, ok, err, g.Fence)
	}
}

// TestAskMayNotJumpTheQueue: while the session's queue has live tickets
// ahead of the asker, an ask is refused with their number and writes
// nothing; the run at the queue's head may ask; an ask recorded before a
// ticket was taken keeps its place and is handed over.
func TestAskMayNotJumpTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "queued"}
	holder, waiter, second, asker := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	mustAcquire(t, s, k, holder, time.Hour)
	for _, run := range []uuid.UUID{waiter, second} {
		if _, err := s.Enqueue(ctx, k, run, time.Hour, "waiter"); err != nil {
			t.Fatal(err)
		}
	}
	before := len(keyEvents(t, s, k))
	a, err := s.AskHandover(ctx, k, asker, time.Hour, "phone")
	if err != nil || a.Outcome != data.AskQueued || a.Ahead != 2 {
		t.Fatalf("AskHandover behind two tickets = %+v, %v; want queued with 2 ahead", a, err)
	}
	if a, err := s.AskHandover(ctx, k, second, time.Hour, "waiter"); err != nil || a.Outcome != data.AskQueued || a.Ahead != 1 {
		t.Fatalf("AskHandover of the second ticket's run = %+v, %v; want queued with 1 ahead", a, err)
	}
	if after := keyEvents(t, s, k); len(after) != before {
		t.Errorf("the refused asks wrote %v", kinds(after[before:]))
	}
	if a, err := s.AskHandover(ctx, k, waiter, time.Hour, "waiter"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover of the queue's head = %+v, %v; want asked", a, err)
	}

	// An ask recorded first keeps its place when a ticket is taken after it.
	k2 := data.Key{Account: "acme", Session: "asked-first"}
	holder2 := uuid.New()
	mustAcquire(t, s, k2, holder2, time.Hour)
	if a, err := s.AskHandover(ctx, k2, asker, time.Hour, "phone"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover on a session without a queue = %+v, %v; want asked", a, err)
	}
	if _, err := s.Enqueue(ctx, k2, uuid.New(), time.Hour, "late waiter"); err != nil {
		t.Fatal(err)
	}
	if a, err := s.AskHandover(ctx, k2, asker, time.Hour, "phone"); err != nil || a.Outcome != data.AskPending {
		t.Fatalf("asking again after a ticket was taken = %+v, %v; want pending", a, err)
	}
	if h, err := s.HandOver(ctx, k2, holder2, time.Minute); err != nil || h.Outcome != data.AskHandedOver || h.Ask.RunID != data.PublicRunID(asker) {
		t.Fatalf("HandOver = %+v, %v; want handed over to the asker", h, err)
	}
}

// TestHandedOverEventNamesThePrevHolder: the handed_over event records the
// label of the holder that let go (prev_holder), as a preempted event
// names its victim.
func TestHandedOverEventNamesThePrevHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "s1"}
	holder, asker := uuid.New(), uuid.New()
	if _, err := s.Acquire(ctx, k, holder, time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil {
		t.Fatal(err)
	}
	if h, err := s.HandOver(ctx, k, holder, time.Minute); err != nil || h.Outcome != data.AskHandedOver {
		t.Fatalf("HandOver = %+v, %v", h, err)
	}
	var over data.Event
	for _, e := range keyEvents(t, s, k) {
		if e.Kind == data.KindHandedOver {
			over = e
		}
	}
	if over.Holder != "phone" || over.PrevHolder != "desktop" || over.PrevRunID != data.PublicRunID(holder) {
		t.Errorf("handed_over event = %+v, want holder phone, prev_holder desktop, prev_run_id %s", over, data.PublicRunID(holder))
	}
}
