package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

// TestQueuedWaiterAfterHandover: the phone asks the desktop to hand over,
// then a tablet queues; an ask recorded before a ticket keeps its place
// (an ask may not jump the queue, but this one was first), so the desktop
// hands over to the phone and the tablet stays at the queue's head; when
// the phone releases, the tablet is granted the lease next, with nothing in
// between in the history (handed_over, released, the tablet's acquired) and
// a higher fence, woken by the release's notification. Each run is a Client
// of its own.
func TestQueuedWaiterAfterHandover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	// Leases and tickets live 10 minutes, and the waiters poll as rarely: a
	// grant within 2 minutes of the release is the notifications' doing.
	cfg := lease.Config{TTL: 10 * time.Minute, PollInterval: 10 * time.Minute}
	desktopC, tabletC, phoneC := newClient(t, db.Store(t), cfg), newClient(t, db.Store(t), cfg), newClient(t, db.Store(t), cfg)
	desktop := acquire(t, desktopC, permit(t, desktopC, testKey, "desktop"))
	asking := askAsync(ctx, phoneC, permit(t, phoneC, testKey, "phone"), time.Minute, lease.BusyRefuse)
	nextAsk(t, desktop)

	queued := make(chan *lease.Lease, 1)
	failed := make(chan error, 1)
	go func() {
		l, err := tabletC.Queue(ctx, permit(t, tabletC, testKey, "tablet"))
		if err != nil {
			failed <- err
			return
		}
		queued <- l
	}()
	leasetest.WaitQueued(t, s, testKey, 1)

	if err := desktop.HandOver(ctx); err != nil {
		t.Fatalf("HandOver with a waiter queued after the ask: %v", err)
	}
	r := result(t, asking)
	if r.err != nil {
		t.Fatalf("Ask recorded before the waiter queued: %v", r.err)
	}
	phone := r.l
	if q := leasetest.WaitQueued(t, s, testKey, 1); q[0].Holder != "tablet" {
		t.Fatalf("queue after the hand-over = %+v, want the tablet's ticket still there", q)
	}
	select {
	case l := <-queued:
		t.Fatalf("the waiter was granted the lease (fence %d) while the phone held it", l.Fence())
	case err := <-failed:
		t.Fatalf("the waiter's Queue ended: %v", err)
	default:
	}
	if err := phone.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var tablet *lease.Lease
	select {
	case tablet = <-queued:
	case err := <-failed:
		t.Fatalf("the waiter's Queue ended: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the waiter was not granted the lease within 2 minutes of the phone's release")
	}
	defer tablet.Release(ctx)
	if tablet.Fence() <= phone.Fence() {
		t.Errorf("the waiter's fence %d, want above the phone's %d", tablet.Fence(), phone.Fence())
	}
	evs, err := s.EventsFor(ctx, testKey, 50)
	if err != nil {
		t.Fatal(err)
	}
	var owners []string // the ownership changes, oldest first
	for i := len(evs) - 1; i >= 0; i-- {
		switch e := evs[i]; e.Kind {
		case data.KindAcquired, data.KindTakenOver, data.KindPreempted, data.KindHandedOver, data.KindReleased, data.KindForceReleased:
			owners = append(owners, string(e.Kind)+" "+e.Holder)
		}
	}
	want := []string{"acquired desktop", "handed_over phone", "released phone", "acquired tablet"}
	if len(owners) != len(want) {
		t.Fatalf("ownership changes = %q, want %q", owners, want)
	}
	for i := range want {
		if owners[i] != want[i] {
			t.Fatalf("ownership changes = %q, want %q", owners, want)
		}
	}
}
