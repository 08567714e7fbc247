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

// TestReplayedEventsWakeNobody: a role with CONNECT only sends
// again the notifications of old releases of the key a waiter waits for,
// and of old takeovers and forced releases of a key the same Client holds.
// Before, each woke the waiter into another acquire attempt and made the
// holder check; now the listener drops them (they are behind its reading
// position), the waiter tries no more and the holder checks nothing. A
// real release still lets the waiter in, once.
func TestReplayedEventsWakeNobody(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	app, _ := pgtest.Login(t, db, "lease_app")
	admin := db.Store(t)
	busy, held := lease.Key{Account: "acct", Session: "busy"}, lease.Key{Account: "acct", Session: "held"}
	for range 5 { // the history: runs that held both keys and let go
		for _, k := range []lease.Key{busy, held} {
			run := uuid.New()
			if _, err := admin.Acquire(ctx, k, run, time.Minute, "old"); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.ForceRelease(ctx, k, data.PublicRunID(run), "old"); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.Acquire(ctx, k, uuid.New(), time.Millisecond, "old"); err != nil {
				t.Fatal(err)
			}
			pgtest.WaitExpired(t, db.Conn(t), k)
			if _, err := admin.Acquire(ctx, k, run, time.Minute, "old"); err != nil { // a takeover
				t.Fatal(err)
			}
			if _, err := admin.Release(ctx, k, run); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := pgtest.History(t, admin)

	other := newClient(t, admin, lease.Config{TTL: floodTTL})
	blocker := acquire(t, other, permit(t, other, busy, "other"))
	var log attemptLog
	c := newClient(t, pgtest.OpenStore(t, app, data.Options{}), lease.Config{TTL: floodTTL, PollInterval: time.Hour, Metrics: log.hook()})
	h := acquire(t, c, permit(t, c, held, "holder"))
	canary := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "canary"}, "canary"))
	sentinel := acquire(t, c, permit(t, c, lease.Key{Account: "acct", Session: "sentinel"}, "sentinel"))
	acquires, _ := log.counts()
	waited := waitAsync(ctx, c, permit(t, c, busy, "waiter"))
	// Its first attempt, and the one the resync of its listener's start asks for.
	pgtest.Eventually(t, 30*time.Second, "the waiter's first two attempts", func() bool {
		n, _ := log.counts()
		return n >= acquires+2
	})
	forceLost(t, admin, canary) // the listener delivers
	acquires, _ = log.counts()
	checks := lease.HolderChecks(c)

	nobody := pgtest.ConnectNobody(t, db)
	for range 5 {
		nobody.Notify(t, pgtest.Replays(t, old, 1))
	}
	forceLost(t, admin, sentinel) // notifications come in order: the replays were handled
	if n, _ := log.counts(); n != acquires {
		t.Errorf("the waiter made %d acquire attempts after %d replayed notifications, want none", n-acquires, 5*len(old))
	}
	if n := lease.HolderChecks(c) - checks; n != 1 { // the sentinel's
		t.Errorf("%d holder checks, want 1 (the sentinel's forced release)", n)
	}
	if st := h.State().Status; st != lease.Held {
		t.Errorf("the held lease is %v (%v), want held", st, h.Err())
	}

	if err := blocker.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := waited()
	if err != nil {
		t.Fatalf("Wait after the real release: %v", err)
	}
	t.Cleanup(func() { _ = l.Release(ctx) })
	if n, _ := log.counts(); n != acquires+1 {
		t.Errorf("the waiter made %d attempts for the real release, want 1", n-acquires)
	}
}

// forceLost force-releases l as admin and waits until its holder watch has
// ended it.
func forceLost(t *testing.T, admin *data.Store, l *lease.Lease) {
	t.Helper()
	if _, err := admin.ForceRelease(context.Background(), l.Key(), l.RunID(), "test"); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, l, 30*time.Second); !errors.Is(cause, lease.ErrForceReleased) {
		t.Fatalf("%v lost with %v, want ErrForceReleased", l.Key(), cause)
	}
}
