package lease_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// The heartbeat keeps a lease far beyond its TTL, moving the local deadline
// and the server expiry forward with each confirmed renewal.
func TestHeartbeatKeepsLease(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{TTL: 600 * time.Millisecond})
	l := acquire(t, c, permit(t, c, testKey, "h"))
	first := l.State()
	pgtest.Eventually(t, 20*time.Second, "renewals to carry the lease past three TTLs", func() bool {
		st := l.State()
		return st.ExpiresAt.Sub(first.ExpiresAt) > 3*600*time.Millisecond
	})
	st := l.State()
	if st.Status != lease.Held || l.Err() != nil {
		t.Errorf("status %v err %v, want held", st.Status, l.Err())
	}
	if !st.Deadline.After(first.Deadline) {
		t.Errorf("deadline %v not after the first %v", st.Deadline, first.Deadline)
	}
	row := holderOf(t, store, testKey)
	if row.RunID != l.RunID() || row.Fence != l.Fence() {
		t.Errorf("row = %+v, want run %v fence %d (renewals never change the fence)", row, l.RunID(), l.Fence())
	}
}

// held -> at risk -> lost: the database becomes unreachable (blackholed),
// renewals fail, and the local deadline ends the lease before the server
// lets anyone else in.
func TestStateHeldAtRiskLost(t *testing.T) {
	db := pgtest.New(t)
	proxy, dsn := pgtest.Proxied(t, db.URL)
	cut := pgtest.OpenStore(t, dsn, data.Options{})
	direct := db.Store(t)
	cfg := lease.Config{TTL: 4 * time.Second, RenewInterval: 400 * time.Millisecond, SafetyMargin: 1500 * time.Millisecond,
		RenewTimeout: 300 * time.Millisecond}
	c := newClient(t, cut, cfg)
	l := acquire(t, c, permit(t, c, testKey, "cut-off"))
	rec := recordStatuses(l)
	first := l.State().ExpiresAt
	pgtest.Eventually(t, 10*time.Second, "a confirmed renewal", func() bool { return l.State().ExpiresAt.After(first) })

	snap, err := direct.Snapshot(context.Background()) // maps the local clock onto the server's
	if err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	cause := waitDone(t, l, 20*time.Second)
	// The holder stopped while the server still counted the lease as held:
	// its stop, on the server clock, is before the row's expiry.
	stopped, expiry := snap.Clock.At(l.State().Since), holderOf(t, direct, testKey).ExpiresAt
	other := newClient(t, direct, lease.Config{TTL: 5 * time.Second})

	if got, want := rec.wait(t), []lease.Status{lease.Held, lease.AtRisk, lease.Lost}; !slices.Equal(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	var lost *lease.LostError
	if !errors.As(cause, &lost) || !errors.Is(cause, lease.ErrLost) || !errors.Is(cause, lease.ErrExpired) {
		t.Fatalf("cause = %v, want a *LostError with ErrExpired", cause)
	}
	if lost.Last == nil || lost.RunID != l.RunID() || lost.Fence != l.Fence() {
		t.Errorf("LostError = %+v, want the last renewal error, run %v, fence %d", lost, l.RunID(), l.Fence())
	}
	if !stopped.Before(expiry) {
		t.Errorf("the holder stopped at %v on the server clock, not before the lease expired there at %v", stopped, expiry)
	}
	t.Logf("the holder stopped %v before the server-side expiry (safety margin %v)", expiry.Sub(stopped), cfg.SafetyMargin)

	// Once the server expiry passes, a waiter takes over with a higher fence.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	next, err := other.Wait(ctx, permit(t, other, testKey, "competitor"))
	if err != nil {
		t.Fatalf("Wait for takeover err = %v", err)
	}
	defer next.Release(context.Background())
	if next.Fence() <= l.Fence() {
		t.Errorf("takeover fence %d, want > %d", next.Fence(), l.Fence())
	}
	// The lost holder's late Release, once the network heals, leaves the new
	// holder alone.
	proxy.Resume()
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release of a lost lease err = %v", err)
	}
	if got := holderOf(t, direct, testKey); got.RunID != next.RunID() {
		t.Errorf("holder after the lost run's Release = %v, want %v", got.RunID, next.RunID())
	}
	if !errors.Is(l.Err(), lease.ErrExpired) || l.State().Status != lease.Lost {
		t.Errorf("after Release: status %v cause %v, want lost with its original cause", l.State().Status, l.Err())
	}
}

// A forced release is noticed (by the holder watch, or the next renewal),
// with who did it and why.
func TestForcedReleaseLosesLease(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	cfg := lease.Config{TTL: 3 * time.Second}
	c := newClient(t, store, cfg)
	l := acquire(t, c, permit(t, c, testKey, "h"))
	ok, err := store.ForceRelease(context.Background(), testKey, l.RunID(), "stuck job")
	if err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	forced := time.Now()
	cause := waitDone(t, l, 20*time.Second)
	t.Logf("holder noticed the forced release after %s (renew interval %s)", time.Since(forced).Round(time.Millisecond), c.Config().RenewInterval)
	var lost *lease.LostError
	if !errors.As(cause, &lost) || !errors.Is(cause, lease.ErrForceReleased) || !errors.Is(cause, lease.ErrRejected) {
		t.Fatalf("cause = %v, want *LostError with ErrForceReleased", cause)
	}
	if lost.By.Reason != "stuck job" || lost.By.Actor == "" || lost.By.RunID != l.RunID() {
		t.Errorf("LostError.By = %+v, want the force_released event with reason and actor", lost.By)
	}
	if l.State().Status != lease.Lost {
		t.Errorf("status %v, want lost", l.State().Status)
	}
	// Whether the history also holds a renew_rejected for the run depends on
	// who noticed first: a renewal (the listener's first resync) writes one,
	// the holder watch's read does not (TestHolderWatchWritesNoZombieLine).
}
