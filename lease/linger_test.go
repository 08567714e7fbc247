package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestQueueTurnsKeepTheListener: a Client that takes turns (Queue, hold,
// release, Queue again) keeps the listener it started for its first turn:
// its waiter, then its lease, then its next waiter hear the notifications
// on it. Each change between them (the waiter gone, its catch-up no longer
// needed; the lease released, nothing subscribed) restarted or stopped the
// listener at once: two new connections a turn, each a resync (the holder
// renewed early, the waiter tried again).
func TestQueueTurnsKeepTheListener(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	c := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	lease.SetListenerLinger(c, time.Hour) // nothing lingers out within the test
	p := permit(t, c, testKey, "worker")
	const turns = 5
	for range turns {
		l, err := c.Queue(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := lease.ListenerStarts(c); got != 1 {
		t.Fatalf("%d turns started the listener %d times, want once", turns, got)
	}
}

// TestListenerLingersThenGoes: what a Client no longer needs goes once it
// has lingered: the catch-up after its last waiter (a lease held alone
// needs none), then the listener after its last subscription.
func TestListenerLingersThenGoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	pool := db.Pool(t)
	c := newClient(t, db.Store(t), lease.Config{TTL: 30 * time.Second})
	lease.SetListenerLinger(c, 100*time.Millisecond)
	l, err := c.Queue(ctx, permit(t, c, testKey, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "the held lease's listener to drop the catch-up", func() bool {
		return lease.ListenerRunning(c) && !lease.ListenerCatchingUp(c)
	})
	pgtest.Eventually(t, 30*time.Second, "the held lease's listener to listen", func() bool { return listening(t, pool) })
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "the listener to stop", func() bool {
		return !lease.ListenerRunning(c) && !listening(t, pool)
	})
}
