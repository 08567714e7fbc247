package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

func TestReleaseNil(t *testing.T) {
	t.Parallel()
	var l *lease.Lease
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("(*Lease)(nil).Release err = %v, want nil", err)
	}
}

// Released before the heartbeat ever ran; then released again after another
// run took the session: the second Release touches nothing.
func TestReleaseBeforeFirstRenewalAndTwice(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{TTL: 30 * time.Second})
	l := acquire(t, c, permit(t, c, testKey, "h"))
	rec := recordStatuses(l)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Release runs detached from its context's cancellation
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release err = %v", err)
	}
	if got := rec.wait(t); len(got) != 2 || got[1] != lease.Released {
		t.Errorf("statuses = %v, want [held released]", got)
	}
	if !errors.Is(l.Err(), lease.ErrReleased) || errors.Is(l.Err(), lease.ErrLost) {
		t.Errorf("cause = %v, want ErrReleased and not a loss", l.Err())
	}
	if got := holderOf(t, store, testKey); got.RunID != [16]byte{} {
		t.Fatalf("row still held by %v after Release", got.RunID)
	}

	other := newClient(t, store, lease.Config{TTL: 30 * time.Second})
	next := acquire(t, other, permit(t, other, testKey, "next"))
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("second Release err = %v, want nil", err)
	}
	if got := holderOf(t, store, testKey); got.RunID != next.RunID() {
		t.Errorf("holder after a repeated Release = %v, want %v (untouched)", got.RunID, next.RunID())
	}
	if l.State().Status != lease.Released || next.State().Status != lease.Held {
		t.Errorf("statuses = %v and %v, want released and held", l.State().Status, next.State().Status)
	}
	evs, err := store.EventsFor(context.Background(), testKey, 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	if len(kinds) != 3 || kinds[0] != "acquired" || kinds[1] != "released" || kinds[2] != "acquired" {
		t.Errorf("events newest first = %v, want [acquired released acquired]", kinds)
	}
}

// Release after a loss keeps the loss as the cause and never revives it.
func TestReleaseAfterLoss(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{TTL: time.Second})
	l := acquire(t, c, permit(t, c, testKey, "h"))
	leasetest.ForceLoss(t, store, l)
	if err := l.Release(context.Background()); err != nil {
		t.Errorf("Release after loss err = %v", err)
	}
	if !errors.Is(l.Err(), lease.ErrForceReleased) || l.State().Status != lease.Lost {
		t.Errorf("after Release: %v %v, want lost with ErrForceReleased", l.State().Status, l.Err())
	}
	if got := holderOf(t, store, testKey); got.RunID != [16]byte{} {
		t.Errorf("row revived for %v", got.RunID)
	}
}
