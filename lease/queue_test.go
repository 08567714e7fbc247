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
	"github.com/leasetop/leasetop/lease/leasetest"
)

// TestQueueCancelledWaiterPromotesTheNext: a Queue whose ctx is cancelled
// cancels its ticket; the waiter behind it is the head at once and, when the
// holder releases, is granted the lease (PollInterval far away: a
// notification moves it).
func TestQueueCancelledWaiterPromotesTheNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	client, err := lease.New(s, lease.Config{TTL: time.Minute, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	permit := func(label string) lease.Permit {
		p, err := client.Authorize(ctx, allowAll, testKey, label)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	holder, err := client.Try(ctx, permit("holder"))
	if err != nil {
		t.Fatal(err)
	}
	firstCtx, cancelFirst := context.WithCancel(ctx)
	firstDone := make(chan error, 1)
	go func() {
		_, err := client.Queue(firstCtx, permit("first"))
		firstDone <- err
	}()
	leasetest.WaitQueued(t, s, testKey, 1)
	secondDone := make(chan *lease.Lease, 1)
	go func() {
		l, err := client.Queue(ctx, permit("second"))
		if err != nil {
			t.Errorf("second's Queue: %v", err)
		}
		secondDone <- l
	}()
	leasetest.WaitQueued(t, s, testKey, 2)

	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("first's Queue after its ctx was cancelled: %v, want context.Canceled", err)
	}
	q := leasetest.WaitQueued(t, s, testKey, 1)
	if q[0].Holder != "second" {
		t.Fatalf("head after first's cancel = %q, want second", q[0].Holder)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-secondDone
	if l == nil {
		t.Fatal("second got no lease")
	}
	defer l.Release(ctx)
	if l.Fence() <= holder.Fence() {
		t.Errorf("second's fence %d, want above the holder's %d", l.Fence(), holder.Fence())
	}
	evs, err := s.EventsFor(ctx, testKey, 1000) // newest first
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(evs)
	var left []string
	for _, ev := range evs {
		if ev.Kind == data.KindQueueLeft {
			left = append(left, ev.Holder+":"+ev.Reason)
		}
	}
	if len(left) != 2 || left[0] != "first:cancelled" || left[1] != "second:granted" {
		t.Errorf("queue_left events = %v, want [first:cancelled second:granted]", left)
	}
}
