package lease_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestLimitTryAndWait: with the account at its limit of one run, Try of
// another session is refused with a *LimitError (ErrAtLimit and ErrHeld)
// naming the run that holds the slot; Wait for it is woken by that run's
// release in another session of the account, long before its poll
// interval and its listener's catch-up read (both a minute: only the
// release's notification can wake it in time), and declares its pool on
// the lease it gets.
func TestLimitTryAndWait(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	ctx := context.Background()
	if _, err := store.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	cfg := lease.Config{TTL: 30 * time.Second, PollInterval: 60 * time.Second, Listener: data.ListenerConfig{CatchUp: time.Minute}}
	a, b := newClient(t, store, cfg), newClient(t, store, cfg)
	k1, k2 := lease.Key{Account: "acme", Session: "chat-1"}, lease.Key{Account: "acme", Session: "chat-2"}
	la := acquire(t, a, permit(t, a, k1, "a"))
	pb, err := b.AuthorizeRequest(ctx, allowAll, lease.Request{Key: k2, Holder: "b", Pool: "deep", Priority: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Try(ctx, pb)
	var le *lease.LimitError
	if !errors.As(err, &le) || !errors.Is(err, lease.ErrAtLimit) || !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Try in a full account: %v, want a *LimitError (ErrAtLimit, ErrHeld)", err)
	}
	if len(le.Holders) != 1 || le.Holders[0].RunID != la.RunID() || le.Holders[0].Session != "chat-1" {
		t.Fatalf("LimitError holders %+v, want chat-1's run %v", le.Holders, la.RunID())
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second) // well below the poll interval
	defer cancel()
	w := startWait(wctx, b, pb)
	pool := db.Pool(t)
	pgtest.Eventually(t, 10*time.Second, "the waiter's listener", func() bool { return listening(t, pool) })
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb := w.lease(t, 20*time.Second, "after the account's only run released")
	var gotPool string
	var gotPrio int16
	if err := db.Conn(t).QueryRow(ctx, `SELECT pool, priority FROM lease.session_lease WHERE session_id = 'chat-2' AND run_id = $1`, lb.RunID()).Scan(&gotPool, &gotPrio); err != nil {
		t.Fatal(err)
	}
	if gotPool != "deep" || gotPrio != 3 {
		t.Fatalf("lease's pool %q priority %d, want deep, 3", gotPool, gotPrio)
	}
}

// TestLimitWaiterReadsBackOnlyWhatWakesIt: a run waiting for a slot of its
// account hears every session of the account, but only the events that
// may free a slot or move the account's queue (a release, a ticket that
// left) cost its notifier a read back; a grant, a ticket taken or a
// refusal in another session wakes no waiter, and is not read.
func TestLimitWaiterReadsBackOnlyWhatWakesIt(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	ctx := context.Background()
	if _, err := store.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	cfg := lease.Config{TTL: 30 * time.Second, PollInterval: 60 * time.Second}
	a, b := newClient(t, store, cfg), newClient(t, store, cfg)
	la := acquire(t, a, permit(t, a, lease.Key{Account: "acme", Session: "chat-1"}, "a"))
	defer la.Release(ctx)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := startWait(wctx, b, permit(t, b, lease.Key{Account: "acme", Session: "chat-2"}, "b"))
	// The waiter subscribes to the account once refused at its limit.
	pgtest.Eventually(t, time.Minute, "the waiter's refusal", func() bool {
		var refused bool
		err := db.Pool(t).QueryRow(ctx, `SELECT EXISTS (SELECT FROM lease.event
			WHERE kind = 'limit_refused' AND session_id = 'chat-2')`).Scan(&refused)
		return err == nil && refused
	})
	pgtest.Eventually(t, time.Minute, "the waiter's subscription to its account", func() bool {
		return len(lease.ReadBackKinds(b, []data.Event{{ID: 1, Kind: data.KindReleased, Key: data.Key{Account: "acme", Session: "chat-9"}}})) == 1
	})
	other := data.Key{Account: "acme", Session: "chat-3"}
	var evs []data.Event
	for i, k := range []data.Kind{data.KindAcquired, data.KindQueueJoined, data.KindLimitRefused, data.KindReleased, data.KindQueueLeft} {
		evs = append(evs, data.Event{ID: int64(i + 1), Kind: k, Key: other})
	}
	got := fmt.Sprint(lease.ReadBackKinds(b, evs))
	if want := fmt.Sprint([]data.Kind{data.KindReleased, data.KindQueueLeft}); got != want {
		t.Fatalf("the waiter's notifier reads back %s of the account's events, want %s", got, want)
	}
	if _, ok := w.returned(); ok {
		t.Fatal("the waiter returned while the account's only slot is held")
	}
}
