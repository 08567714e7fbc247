package lease_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// askResult is an Ask's outcome.
type askResult struct {
	l   *lease.Lease
	err error
}

// askAsync starts c.Ask and returns its outcome's channel.
func askAsync(ctx context.Context, c *lease.Client, p lease.Permit, timeout time.Duration, then lease.OnBusy) <-chan askResult {
	done := make(chan askResult, 1)
	go func() {
		l, err := c.Ask(ctx, p, timeout, then)
		done <- askResult{l, err}
	}()
	return done
}

// nextAsk waits for the holder's next ask.
func nextAsk(t *testing.T, l *lease.Lease) lease.IncomingAsk {
	t.Helper()
	select {
	case a, ok := <-l.Asked():
		if !ok {
			t.Fatalf("Asked closed: the lease ended (%v)", l.Err())
		}
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("no ask delivered within 30s")
	}
	panic("unreachable")
}

// result waits for an Ask's outcome.
func result(t *testing.T, ch <-chan askResult) askResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.l != nil {
			t.Cleanup(func() { _ = r.l.Release(context.Background()) })
		}
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("Ask did not return within 60s")
	}
	panic("unreachable")
}

// TestAskHandOver: a run asks, the holder's Asked delivers the ask, the
// holder hands over: its lease is lost with ErrHandedOver naming the asker,
// the asker holds the lease with a higher fence and keeps it renewed, and a
// third run racing acquires on its own connection the whole time never gets
// it.
func TestAskHandOver(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	thirdC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	asks := l.Asked()

	var (
		stop, slipped atomic.Bool
		attempts      atomic.Int64
		wg            sync.WaitGroup
	)
	third := permit(t, thirdC, testKey, "third")
	wg.Go(func() {
		for !stop.Load() {
			if tl, err := thirdC.Try(ctx, third); err == nil {
				slipped.Store(true)
				_ = tl.Release(ctx)
			}
			attempts.Add(1)
		}
	})

	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	var a lease.IncomingAsk
	select {
	case a = <-asks:
	case <-time.After(30 * time.Second):
		t.Fatal("no ask delivered")
	}
	if a.Holder != "phone" || a.Key != testKey || a.Remaining <= 0 {
		t.Fatalf("ask = %+v, want one from \"phone\" on %v with time left", a, testKey)
	}
	n := attempts.Load()
	pgtest.Eventually(t, 10*time.Second, "the third run racing", func() bool { return attempts.Load() > n+2 })
	if err := l.HandOver(ctx); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	var lost *lease.LostError
	if cause := context.Cause(l.Context()); !errors.As(cause, &lost) || !errors.Is(cause, lease.ErrHandedOver) ||
		lost.By.RunID != a.RunID || lost.By.Holder != "phone" {
		t.Fatalf("holder's cause = %v, want a LostError with ErrHandedOver naming run %s", cause, a.RunID)
	}
	r := result(t, done)
	if r.err != nil {
		t.Fatalf("Ask: %v", r.err)
	}
	if r.l.RunID() != a.RunID || r.l.Fence() <= l.Fence() || r.l.Fence() != lost.By.Fence {
		t.Fatalf("asker holds run %s fence %d; want run %s, fence %d above the holder's %d",
			r.l.RunID(), r.l.Fence(), a.RunID, lost.By.Fence, l.Fence())
	}
	n = attempts.Load()
	pgtest.Eventually(t, 10*time.Second, "the third run racing after the hand-over", func() bool { return attempts.Load() > n+2 })
	stop.Store(true)
	wg.Wait()
	if slipped.Load() {
		t.Fatal("a third run acquired the lease around the hand-over")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("the old holder's Release: %v", err)
	}
	row := holderOf(t, db.Store(t), testKey)
	if row.RunID != r.l.RunID() || row.Fence != r.l.Fence() {
		t.Fatalf("lease row = %s fence %d after the old holder's Release, want the asker's", row.RunID, row.Fence)
	}
	// The asker's lease is its own now: it renews (its deadline moves).
	before := r.l.State().Deadline
	pgtest.Eventually(t, 10*time.Second, "the asker's lease to renew", func() bool {
		st := r.l.State()
		return st.Status == lease.Held && st.Deadline.After(before)
	})
}

// TestAskDeclined: the holder declines; Ask returns ErrAskDeclined (an
// ErrHeld too) and the holder keeps its lease.
func TestAskDeclined(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	a := nextAsk(t, l)
	if err := a.Decline(ctx); err != nil {
		t.Fatalf("Decline: %v", err)
	}
	r := result(t, done)
	var ae *lease.AskError
	if !errors.Is(r.err, lease.ErrAskDeclined) || !errors.Is(r.err, lease.ErrHeld) || !errors.As(r.err, &ae) || ae.Ask.RunID != a.RunID {
		t.Fatalf("Ask err = %v, want an AskError with ErrAskDeclined and ErrHeld", r.err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("holder's lease after declining: %v", err)
	}
	if err := l.HandOver(ctx); !errors.Is(err, lease.ErrNoAsk) {
		t.Fatalf("HandOver after declining err = %v, want ErrNoAsk", err)
	}
}

// TestAskSecondAskerRefused: while one ask is pending, a second asker is
// refused at once with who asked and until when, and a plain Try's
// HeldError names the pending ask.
func TestAskSecondAskerRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	firstC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	secondC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	actx, cancel := context.WithCancel(ctx)
	first := askAsync(actx, firstC, permit(t, firstC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	a := nextAsk(t, l)

	_, err := secondC.Ask(ctx, permit(t, secondC, testKey, "tablet"), 30*time.Second, lease.BusyRefuse)
	var ae *lease.AskError
	if !errors.Is(err, lease.ErrAskBusy) || !errors.As(err, &ae) || ae.Ask.RunID != a.RunID || ae.Ask.Holder != "phone" || ae.Ask.Until.IsZero() {
		t.Fatalf("second Ask err = %v, want ErrAskBusy naming run %s (phone) and its deadline", err, a.RunID)
	}
	_, err = secondC.Try(ctx, permit(t, secondC, testKey, "tablet"))
	var held *lease.HeldError
	if !errors.As(err, &held) || held.Ask == nil || held.Ask.RunID != a.RunID {
		t.Fatalf("Try err = %v, want a HeldError naming the pending ask", err)
	}

	// The first asker gives up: its ask is withdrawn, and a hand-over is
	// no longer possible.
	cancel()
	if r := result(t, first); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the cancelled Ask err = %v, want context.Canceled", r.err)
	}
	if err := l.HandOver(ctx); !errors.Is(err, lease.ErrNoAsk) {
		t.Fatalf("HandOver after the asker gave up err = %v, want ErrNoAsk", err)
	}
}

// TestAskExpiresUnanswered: nobody answers; at the deadline the ask ends as
// handover_expired and the fallback decides: refuse returns ErrAskExpired
// (each ask once). The holder keeps its lease. (TestAskThenQueue and
// TestAskThenPreempt: the other fallbacks.)
func TestAskExpiresUnanswered(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	p := permit(t, askerC, testKey, "phone")
	if _, err := askerC.Ask(ctx, p, 200*time.Millisecond, lease.BusyRefuse); !errors.Is(err, lease.ErrAskExpired) {
		t.Fatalf("Ask err = %v, want ErrAskExpired", err)
	}
	if _, err := askerC.Ask(ctx, p, 200*time.Millisecond, lease.BusyRefuse); !errors.Is(err, lease.ErrAskExpired) {
		t.Fatalf("second Ask err = %v, want ErrAskExpired", err)
	}
	expired := 0
	evs, err := db.Store(t).EventsFor(ctx, testKey, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == data.KindHandoverExpired {
			expired++
		}
	}
	if expired != 2 {
		t.Fatalf("%d handover_expired events, want 2 (one per ask)", expired)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("holder's lease: %v", err)
	}
}

// TestAskFreeSessionIsAcquired: Ask on a free session acquires it; and a
// pending ask whose holder releases gets the lease.
func TestAskFreeSessionIsAcquired(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	other := lease.Key{Account: "acct", Session: "free"}
	if l, err := askerC.Ask(ctx, permit(t, askerC, other, "phone"), time.Second, lease.BusyRefuse); err != nil {
		t.Fatalf("Ask on a free session: %v", err)
	} else {
		_ = l.Release(ctx)
	}
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	a := nextAsk(t, l)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := result(t, done)
	if r.err != nil || r.l.RunID() != a.RunID {
		t.Fatalf("Ask after the holder released = %v, %v; want the lease for run %s", r.l, r.err, a.RunID)
	}
}

// TestAskClaimRenewsToTheAskersTTL: the handed-over row carries the
// expiry lease.hand_over gave it (now + the holder's TTL, here far
// shorter than the asker's); the asker claims it with a renewal, so the row
// then runs for the asker's own TTL from a send time its local deadline
// counts from. (Claiming with lease.acquire, which returns a run's own
// lease unchanged, would leave the row expiring a holder's TTL after the
// hand-over while the asker's deadline counted its own TTL.)
func TestAskClaimRenewsToTheAskersTTL(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	// 5 s, not less: the asker must hear of the hand-over and claim the row
	// within the holder's TTL, which a loaded machine can take seconds for.
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 5 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: time.Minute})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	nextAsk(t, l)
	if err := l.HandOver(ctx); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	r := result(t, done)
	if r.err != nil {
		t.Fatalf("Ask: %v", r.err)
	}
	row := holderOf(t, db.Store(t), testKey)
	if got := row.ExpiresAt.Sub(row.RenewedAt); row.RunID != r.l.RunID() || got != time.Minute {
		t.Fatalf("claimed row runs %s from its last write (run %s), want the asker's TTL, 1m0s (run %s)", got, row.RunID, r.l.RunID())
	}
}

// TestAskThenQueue: an ask nobody answers falls back to the queue: the
// asker takes a ticket (queue_joined after handover_expired) and is granted
// the lease when the holder releases it.
func TestAskThenQueue(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 200*time.Millisecond, lease.BusyQueue)
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, err := s.QueueLengths(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if q[testKey] == 1 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("Ask then queue returned before the holder let go: %v, %v", r.l, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the asker did not queue within 30s of its ask's deadline")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := result(t, done)
	if r.err != nil || r.l.Fence() <= l.Fence() {
		t.Fatalf("Ask then queue = %v, %v; want the lease with a fence above %d", r.l, r.err, l.Fence())
	}
	evs, err := s.EventsFor(ctx, testKey, 100)
	if err != nil {
		t.Fatal(err)
	}
	var order []data.Kind
	for i := len(evs) - 1; i >= 0; i-- { // EventsFor is newest first
		switch evs[i].Kind {
		case data.KindHandoverExpired, data.KindQueueJoined, data.KindQueueLeft:
			order = append(order, evs[i].Kind)
		}
	}
	want := []data.Kind{data.KindHandoverExpired, data.KindQueueJoined, data.KindQueueLeft}
	if len(order) != len(want) || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("the ask's and the queue's events = %v, want %v", order, want)
	}
}

// TestAskThenPreempt: an ask nobody answers falls back to preempting the
// holder: the asker holds the lease with a higher fence, the holder's lease
// is lost with ErrPreempted, and the preempted event says why.
func TestAskThenPreempt(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	got, err := askerC.Ask(ctx, permit(t, askerC, testKey, "phone"), 200*time.Millisecond, lease.BusyPreempt)
	if err != nil {
		t.Fatalf("Ask then preempt: %v", err)
	}
	defer got.Release(ctx)
	if got.Fence() <= l.Fence() {
		t.Fatalf("the asker's fence %d, want above the holder's %d", got.Fence(), l.Fence())
	}
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the preempted holder did not notice within 30s")
	}
	if !errors.Is(l.Err(), lease.ErrPreempted) {
		t.Fatalf("the holder's lease err = %v, want ErrPreempted", l.Err())
	}
	evs, err := db.Store(t).EventsFor(ctx, testKey, 100)
	if err != nil {
		t.Fatal(err)
	}
	var pre []data.Event
	for _, e := range evs {
		if e.Kind == data.KindPreempted {
			pre = append(pre, e)
		}
	}
	if len(pre) != 1 || pre[0].RunID != got.RunID() || pre[0].PrevRunID != l.RunID() || pre[0].Reason == "" {
		t.Fatalf("preempted events = %+v; want one, of the holder by the asker, with a reason", pre)
	}
}

// TestAskWaitsBehindAQueueOfAFreeSession: a session nobody holds but whose
// queue has a live ticket refuses an acquire (the ticket goes first), and
// an ask too (it may not pass the queue): Ask returns ErrAskQueued at once,
// after one call, instead of alternating asks and acquires as fast as the
// server answers (thousands of asks a second, before asks knew of the
// queue). Counted with track_functions after the asker's connections have
// ended.
func TestAskWaitsBehindAQueueOfAFreeSession(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db.Name}.Sanitize()+` SET track_functions = 'pl'`); err != nil {
		t.Fatal(err)
	}
	s := db.Store(t)
	holder := uuid.New()
	if _, err := s.Acquire(ctx, testKey, holder, time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Enqueue(ctx, testKey, uuid.New(), time.Minute, "tablet"); err != nil || !p.Ticketed() {
		t.Fatalf("Enqueue behind the desktop = %+v, %v; want a ticket", p, err)
	}
	if ok, err := s.Release(ctx, testKey, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	askerStore := db.Store(t)
	askerC := newClient(t, askerStore, lease.Config{TTL: 3 * time.Second, PollInterval: 500 * time.Millisecond})
	if l, err := askerC.Ask(ctx, permit(t, askerC, testKey, "phone"), time.Minute, lease.BusyRefuse); !errors.Is(err, lease.ErrAskQueued) {
		t.Fatalf("Ask behind a live ticket = %v, %v; want ErrAskQueued", l, err)
	}
	askerC.Close()
	askerStore.Close() // its backends end and report their function calls
	var asks int64
	pgtest.Eventually(t, 30*time.Second, "the asker's calls counted", func() bool {
		_, _ = conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
		return conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE schemaname = 'lease' AND funcname = 'ask_handover'`).Scan(&asks) == nil && asks > 0
	})
	if asks != 1 {
		t.Errorf("Ask called lease.ask_handover %d times behind a live ticket; want 1", asks)
	}
}
