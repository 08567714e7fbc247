package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// requestPermit authorizes req on c.
func requestPermit(t *testing.T, c *lease.Client, req lease.Request) lease.Permit {
	t.Helper()
	p, err := c.AuthorizeRequest(context.Background(), allowAll, req)
	if err != nil {
		t.Fatalf("AuthorizeRequest(%+v) err = %v", req, err)
	}
	return p
}

// runIDsOf returns the run ids of key's events of kind, oldest first.
func runIDsOf(t *testing.T, s *data.Store, key lease.Key, kind data.Kind) []uuid.UUID {
	t.Helper()
	evs, err := s.EventsFor(context.Background(), key, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []uuid.UUID
	for i := len(evs) - 1; i >= 0; i-- { // EventsFor is newest first
		if evs[i].Kind == kind {
			out = append(out, evs[i].RunID)
		}
	}
	return out
}

// TestAskCarriesTheRequest: the lease an Ask gets by a hand-over carries
// what its Request declared (NotPreemptible, Attachment), not what the old
// holder did: a device that joins reads the asker's attachment, and a
// preempt of it is refused.
func TestAskCarriesTheRequest(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	otherC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, requestPermit(t, holderC, lease.Request{Key: testKey, Holder: "desktop", Attachment: "stream-desk"}))
	done := askAsync(ctx, askerC, requestPermit(t, askerC, lease.Request{Key: testKey, Holder: "phone",
		NotPreemptible: true, Attachment: "pay-stream"}), 30*time.Second, lease.BusyRefuse)
	nextAsk(t, l)
	if err := l.HandOver(ctx); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	r := result(t, done)
	if r.err != nil {
		t.Fatalf("Ask: %v", r.err)
	}
	if row := holderOf(t, db.Store(t), testKey); row.RunID != r.l.RunID() || !row.NotPreemptible || row.Attachment != "pay-stream" {
		t.Fatalf("the lease handed over = %+v, want the asker's, not preemptible, attachment pay-stream", row)
	}
	_, err := otherC.Try(ctx, permit(t, otherC, testKey, "tablet"))
	var held *lease.HeldError
	if !errors.As(err, &held) || held.Attachment != "pay-stream" || held.Preemptible {
		t.Errorf("a joiner's refusal = %v, want the asker's attachment pay-stream, not preemptible", err)
	}
	if _, err := otherC.Preempt(ctx, permit(t, otherC, testKey, "tablet"), "impatient"); !errors.Is(err, lease.ErrNotPreemptible) {
		t.Errorf("Preempt of the handed-over lease err = %v, want ErrNotPreemptible", err)
	}
}

// TestAskOfNotPreemptibleHolder: a holder that declared itself not
// preemptible cannot be asked: Ask returns at once an *AskError with
// ErrNotPreemptible (and ErrHeld), the holder is not disturbed (no ask is
// delivered, nothing is written), and ThenQueue falls back to the queue.
func TestAskOfNotPreemptibleHolder(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, requestPermit(t, holderC, lease.Request{Key: testKey, Holder: "checkout", NotPreemptible: true}))
	asks := l.Asked()
	_, err := askerC.Ask(ctx, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	var ae *lease.AskError
	if !errors.As(err, &ae) || !errors.Is(err, lease.ErrNotPreemptible) || !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Ask of a not-preemptible holder err = %v, want an AskError with ErrNotPreemptible", err)
	}
	if got := runIDsOf(t, s, testKey, data.KindHandoverAsked); len(got) != 0 {
		t.Errorf("the refused ask wrote %d handover_asked events", len(got))
	}
	select {
	case a := <-asks:
		t.Errorf("the holder was delivered an ask %+v", a)
	default:
	}

	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyQueue)
	pgtest.Eventually(t, 30*time.Second, "the asker to queue", func() bool { return len(runIDsOf(t, s, testKey, data.KindQueueJoined)) == 1 })
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := result(t, done); r.err != nil || r.l.Fence() <= l.Fence() {
		t.Fatalf("Ask then queue = %v, %v; want the lease after the holder", r.l, r.err)
	}
}

// TestAskMayNotJumpTheQueue: while runs are queued, an ask is refused at
// once with ErrAskQueued and their number (nothing recorded, the holder not
// disturbed); ThenQueue joins the queue behind them.
func TestAskMayNotJumpTheQueue(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	if p, err := s.Enqueue(ctx, testKey, uuid.New(), time.Minute, "tablet"); err != nil || !p.Ticketed() {
		t.Fatalf("Enqueue = %+v, %v; want a ticket", p, err)
	}
	_, err := askerC.Ask(ctx, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	var ae *lease.AskError
	if !errors.As(err, &ae) || !errors.Is(err, lease.ErrAskQueued) || ae.Ahead != 1 {
		t.Fatalf("Ask behind a ticket err = %v (%+v), want ErrAskQueued with 1 ahead", err, ae)
	}
	if got := runIDsOf(t, s, testKey, data.KindHandoverAsked); len(got) != 0 {
		t.Errorf("the refused ask wrote %d handover_asked events", len(got))
	}
	if err := l.Err(); err != nil {
		t.Fatalf("the holder's lease after the refused ask: %v", err)
	}

	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	askAsync(actx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyQueue)
	pgtest.Eventually(t, 30*time.Second, "the asker to queue behind the ticket", func() bool {
		q, err := s.QueueLengths(ctx)
		return err == nil && q[testKey] == 2
	})
}

// TestAskDeclinedThenQueue: --then queue applies when the holder declines:
// the asker joins the queue with the ask's run id (handover_asked and
// queue_joined name the same run) and is granted the lease, with that run
// id, when the holder releases it.
func TestAskDeclinedThenQueue(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyQueue)
	if err := nextAsk(t, l).Decline(ctx); err != nil {
		t.Fatalf("Decline: %v", err)
	}
	pgtest.Eventually(t, 30*time.Second, "the asker to queue", func() bool { return len(runIDsOf(t, s, testKey, data.KindQueueJoined)) == 1 })
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := result(t, done)
	if r.err != nil {
		t.Fatalf("Ask then queue after a decline: %v", r.err)
	}
	asked, joined := runIDsOf(t, s, testKey, data.KindHandoverAsked), runIDsOf(t, s, testKey, data.KindQueueJoined)
	if len(asked) != 1 || len(joined) != 1 || asked[0] != joined[0] || r.l.RunID() != asked[0] {
		t.Errorf("asked by %v, queued as %v, holds as %v: want one run id throughout", asked, joined, r.l.RunID())
	}
}

// TestAskThenPreemptLinksTheRunAndReason: the fallback preempt uses the
// ask's run id (handover_asked and preempted name the same run) and records
// AskOptions.Reason; the preemptor's WaitPreempted returns once the
// preempted run has released, not before.
func TestAskThenPreemptLinksTheRunAndReason(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l, err := holderC.Try(ctx, permit(t, holderC, testKey, "desktop"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := askerC.AskWith(ctx, permit(t, askerC, testKey, "phone"),
		lease.AskOptions{Timeout: 200 * time.Millisecond, Then: lease.BusyPreempt, Reason: "moved to the phone"})
	if err != nil {
		t.Fatalf("AskWith then preempt: %v", err)
	}
	defer got.Release(ctx)
	asked, preempted := runIDsOf(t, s, testKey, data.KindHandoverAsked), runIDsOf(t, s, testKey, data.KindPreempted)
	if len(asked) != 1 || len(preempted) != 1 || asked[0] != preempted[0] || got.RunID() != asked[0] {
		t.Errorf("asked by %v, preempted by %v, holds as %v: want one run id throughout", asked, preempted, got.RunID())
	}
	// The preempted event, not merely the last one: the preempted run's
	// renewal, rejected after the preempt, may be recorded after it.
	evs, err := s.EventsFor(ctx, testKey, 100)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs {
		if e.Kind == data.KindPreempted {
			reasons = append(reasons, e.Reason)
		}
	}
	if len(reasons) != 1 || reasons[0] != "moved to the phone" {
		t.Errorf("preempted events' reasons = %q; want one, %q", reasons, "moved to the phone")
	}

	// The preempted run has not released: the preemptor's wait does not end.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := got.WaitPreempted(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitPreempted before the preempted run released = %v, want the context's deadline", err)
	}
	waitDone(t, l, time.Minute)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("the preempted run's Release: %v", err)
	}
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := got.WaitPreempted(wctx); err != nil {
		t.Fatalf("WaitPreempted after the preempted run released = %v, want nil", err)
	}
}
