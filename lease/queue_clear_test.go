package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

// TestQueueClearedWaiterStopsAndTheNextMovesUp: an operator (lease_admin)
// clears the head ticket of a waiting Queue; that Queue returns
// ErrTicketCleared (woken by the queue_left notification: PollInterval is
// far away) instead of joining again at the tail, and the waiter behind it
// is told by OnPlace that it is next, then granted the lease on release.
func TestQueueClearedWaiterStopsAndTheNextMovesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	client := newClient(t, s, lease.Config{TTL: time.Minute, PollInterval: time.Hour})
	holder := acquire(t, client, permit(t, client, testKey, "holder"))

	firstDone := make(chan error, 1)
	go func() {
		_, err := client.Queue(ctx, permit(t, client, testKey, "first"))
		firstDone <- err
	}()
	q := leasetest.WaitQueued(t, s, testKey, 1)
	places := make(chan int, 16)
	secondDone := make(chan *lease.Lease, 1)
	go func() {
		l, err := client.Queue(ctx, permit(t, client, testKey, "second"), lease.OnPlace(func(ahead int) { places <- ahead }))
		if err != nil {
			t.Errorf("second's Queue: %v", err)
		}
		secondDone <- l
	}()
	if got := <-places; got != 1 {
		t.Fatalf("second's first place = %d ahead, want 1", got)
	}

	dsn, _ := pgtest.Login(t, db, "lease_admin")
	admin := pgtest.OpenStore(t, dsn, data.Options{})
	if ok, err := admin.ClearTicket(ctx, testKey, q[0].RunID, "stuck"); err != nil || !ok {
		t.Fatalf("ClearTicket(first) = %v, %v", ok, err)
	}
	select {
	case err := <-firstDone:
		if !errors.Is(err, lease.ErrTicketCleared) {
			t.Fatalf("first's Queue after its ticket was cleared: %v, want ErrTicketCleared", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("first's Queue went on waiting after its ticket was cleared")
	}
	if got := <-places; got != 0 {
		t.Fatalf("second's place after the clear = %d ahead, want 0", got)
	}
	if q := leasetest.WaitQueued(t, s, testKey, 1); q[0].Holder != "second" {
		t.Fatalf("queue after the clear = %+v, want second's ticket alone", q)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-secondDone
	if l == nil {
		t.Fatal("second got no lease")
	}
	defer l.Release(ctx)
}
