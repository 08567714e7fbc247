package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestAskClaimOnNotificationCountsFromTheAskersSend: an asker woken by the
// handed_over notification naming its run claims the lease at once (one
// renewal that reads the fence too), and its local deadline counts its own
// TTL from a time it took before that renewal was sent: after it asked,
// before Ask returned (a claim sent just before the hand-over began and
// answered after it counts from its own send, earlier and so safe). The
// holder's TTL (5 s, the expiry
// lease.hand_over gave the row; shorter could expire before a loaded
// machine's asker claims it) is far shorter than the asker's (1 min): a
// deadline taken from the row's expiry would end about 5 s after the
// hand-over. The asker holds the handed fence, and the row runs for its TTL.
//
// An asker that a resync (its listener's start) woke while the hand-over
// was on its way claims through its ask's answer instead; that claim must
// count from its own send time too. Rounds repeat until one claimed on the
// notification or on its listener's resync (the listener's start is the
// only race).
func TestAskClaimOnNotificationCountsFromTheAskersSend(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 5 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: time.Minute, PollInterval: time.Minute})
	hp, ap := permit(t, holderC, testKey, "desktop"), permit(t, askerC, testKey, "phone")
	pgtest.Eventually(t, 60*time.Second, "a claim on the handed_over notification", func() bool {
		claims := lease.NotifiedClaims(askerC)
		askClaimRound(t, db, holderC, askerC, hp, ap)
		return lease.NotifiedClaims(askerC) > claims
	})
}

// askClaimRound is one hand-over for TestAskClaimOnNotificationCountsFromTheAskersSend.
func askClaimRound(t *testing.T, db pgtest.DB, holderC, askerC *lease.Client, hp, ap lease.Permit) {
	t.Helper()
	ctx := context.Background()
	l := acquire(t, holderC, hp)
	asked := time.Now()
	done := askAsync(ctx, askerC, ap, 30*time.Second, lease.BusyRefuse)
	nextAsk(t, l)
	// Both Clients listen (the holder's watch, the asker's wait): the
	// handed_over notification can reach the asker.
	pgtest.Eventually(t, 10*time.Second, "both listeners", func() bool { return listeners(t, db.Pool(t)) >= 2 })
	if err := l.HandOver(ctx); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	r := result(t, done)
	returned := time.Now()
	if r.err != nil {
		t.Fatalf("Ask: %v", r.err)
	}
	cfg := askerC.Config()
	sent := r.l.State().Deadline.Add(-(cfg.TTL - cfg.SafetyMargin))
	if sent.Before(asked) || sent.After(returned) {
		t.Fatalf("the asker's deadline counts from %s, want a send time between its ask %s and Ask's return %s (holder's expiry used?)",
			sent.Format(time.RFC3339Nano), asked.Format(time.RFC3339Nano), returned.Format(time.RFC3339Nano))
	}
	row := holderOf(t, db.Store(t), testKey)
	if row.RunID != r.l.RunID() || row.Fence != r.l.Fence() || row.Fence <= l.Fence() || row.ExpiresAt.Sub(row.RenewedAt) != time.Minute {
		t.Fatalf("row = run %s fence %d running %s; want the asker's run %s, its fence %d above %d, 1m0s",
			row.RunID, row.Fence, row.ExpiresAt.Sub(row.RenewedAt), r.l.RunID(), r.l.Fence(), l.Fence())
	}
	if err := r.l.Release(ctx); err != nil {
		t.Fatalf("the asker's Release: %v", err)
	}
}

// TestAskKeepsTheRunningListener: an Ask on a Client that already listens
// (it holds another session) neither restarts its listener when it starts
// nor when it ends (a waiter's subscription with the catch-up did, twice: a
// new connection whose start the hand-over waited for).
func TestAskKeepsTheRunningListener(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	idle := acquire(t, askerC, permit(t, askerC, lease.Key{Account: testKey.Account, Session: "idle"}, "backend"))
	t.Cleanup(func() { _ = idle.Release(context.Background()) })
	starts := lease.ListenerStarts(askerC)
	l := acquire(t, holderC, permit(t, holderC, testKey, "desktop"))
	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
	nextAsk(t, l)
	if err := l.HandOver(ctx); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	if r := result(t, done); r.err != nil {
		t.Fatalf("Ask: %v", r.err)
	}
	if got := lease.ListenerStarts(askerC) - starts; got != 0 {
		t.Fatalf("the asker's listener was (re)started %d times by the Ask, want 0", got)
	}
}
