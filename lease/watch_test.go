package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// watchTTL is long enough that the heartbeat's first renewal (TTL/3, 20 s)
// comes after every wait below: only the holder watch can notice a loss.
const watchTTL = time.Minute

// assertLostByForce checks that l ends with ErrForceReleased, naming the
// operator's reason, before its first renewal was due: the holder watch
// noticed it, not the heartbeat.
func assertLostByForce(t *testing.T, l *lease.Lease, acquired time.Time, reason string) {
	t.Helper()
	renewal := l.TTL() / 3
	cause := waitDone(t, l, renewal*3/4)
	var lost *lease.LostError
	if !errors.As(cause, &lost) || !errors.Is(cause, lease.ErrForceReleased) {
		t.Fatalf("cause = %v, want a *LostError with ErrForceReleased", cause)
	}
	if lost.By.Kind != data.KindForceReleased || lost.By.Reason != reason {
		t.Errorf("LostError.By = %+v, want the force_released event with reason %q", lost.By, reason)
	}
	if at := l.State().Since; at.Sub(acquired) >= renewal {
		t.Errorf("lost %s after the grant, not before the first renewal (%s)", at.Sub(acquired), renewal)
	}
}

// TestHolderWatchForcedRelease: a forced release of a held lease cancels its
// Context with ErrForceReleased at once, not at the next renewal (20 s
// away), whether the operator used the library or SQL.
func TestHolderWatchForcedRelease(t *testing.T) {
	for _, via := range []string{"store", "sql"} {
		t.Run(via, func(t *testing.T) {
			db := pgtest.New(t)
			store := db.Store(t)
			c := newClient(t, store, lease.Config{TTL: watchTTL})
			acquired := time.Now()
			l := acquire(t, c, permit(t, c, testKey, "held"))
			reason := "watch test via " + via
			var err error
			if via == "store" {
				_, err = db.Store(t).ForceRelease(context.Background(), testKey, l.RunID(), reason)
			} else {
				_, err = db.Conn(t).Exec(context.Background(), `SELECT lease.force_release($1, $2, $3, $4)`,
					testKey.Account, testKey.Session, l.RunID(), reason)
			}
			if err != nil {
				t.Fatalf("force release: %v", err)
			}
			assertLostByForce(t, l, acquired, reason)
		})
	}
}

// TestHolderWatchIgnoresForgedNotify: a notification claiming that the held
// lease was force-released, sent by anyone who may connect, is read back
// once by the Client's notifier, finds no row and makes nobody check. A
// real event that names the key and another run (a zombie: the run the
// lease was taken over from renewing) makes the holder check: the check
// reads the row, which still names the run, and the lease stays held, its
// expiry unmoved (the check writes nothing).
func TestHolderWatchIgnoresForgedNotify(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	store, pool, conn := db.Store(t), db.Pool(t), db.Conn(t)
	zombie := uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, $2, $3, '1 millisecond', 'zombie')`, testKey.Account, testKey.Session, zombie); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitExpired(t, conn, testKey)
	c := newClient(t, store, lease.Config{TTL: watchTTL})
	l := acquire(t, c, permit(t, c, testKey, "held"))
	granted := l.State().ExpiresAt
	pgtest.Eventually(t, 10*time.Second, "the holder's listener", func() bool { return listening(t, pool) })
	// Its first resync renews the lease once (an event may have come before it listened).
	pgtest.Eventually(t, 10*time.Second, "the renewal at the listener's start", func() bool {
		return l.State().ExpiresAt.After(granted)
	})
	before, checks, reads := l.State().ExpiresAt, lease.HolderChecks(c), lease.NotifierReads(c)
	forged := fmt.Sprintf(`{"id":987654321,"kind":"force_released","account_id":%q,"session_id":%q,"run_id":%q,"fence":%d,"actor":"mallory"}`,
		testKey.Account, testKey.Session, l.RunID(), l.Fence())
	if _, err := conn.Exec(ctx, `SELECT pg_notify('lease_events', $1)`, forged); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT lease.renew($1, $2, $3, '1 hour')`, testKey.Account, testKey.Session, zombie); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 10*time.Second, "the check the zombie's event asked for", func() bool {
		return lease.HolderChecks(c) > checks
	})
	if got := lease.HolderChecks(c) - checks; got != 1 {
		t.Errorf("%d checks, want 1: the zombie's event, not the forged one", got)
	}
	if got := lease.NotifierReads(c) - reads; got < 1 || got > 2 {
		t.Errorf("%d read-backs, want 1 or 2 (the forged notification and the real one, apart or in one batch)", got)
	}
	if st := l.State(); st.Status != lease.Held || l.Err() != nil {
		t.Fatalf("after a forged notification: %v (%v), want held", st.Status, l.Err())
	}
	if got := l.State().ExpiresAt; !got.Equal(before) {
		t.Errorf("the check moved the expiry from %v to %v: it renewed", before, got)
	}
	if got := holderOf(t, store, testKey); got.RunID != l.RunID() || got.Fence != l.Fence() {
		t.Fatalf("the table holds %v fence %d, want %v fence %d", got.RunID, got.Fence, l.RunID(), l.Fence())
	}
}

// TestHolderWatchPolls: through a transaction pooler without a listen DSN the
// holder's listener polls lease.event, and a forced release still ends the
// lease long before its first renewal (within a poll interval, 250 ms).
func TestHolderWatchPolls(t *testing.T) {
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
	var polls atomic.Int32
	store := pgtest.OpenStore(t, via, data.Options{OnPoll: func(data.ListenerState) { polls.Add(1) }})
	c := newClient(t, store, lease.Config{TTL: watchTTL})
	acquired := time.Now()
	l := acquire(t, c, permit(t, c, testKey, "pooled"))
	pgtest.Eventually(t, 10*time.Second, "the holder's listener to poll", func() bool { return polls.Load() > 0 })
	if _, err := db.Store(t).ForceRelease(context.Background(), testKey, l.RunID(), "polled"); err != nil {
		t.Fatal(err)
	}
	assertLostByForce(t, l, acquired, "polled")
}

// TestHolderWatchStopsWithTheLease: the listener a held lease started stops
// once the lease is released and nothing else is held or waited for.
func TestHolderWatchStopsWithTheLease(t *testing.T) {
	db := pgtest.New(t)
	store, pool := db.Store(t), db.Pool(t)
	c := newClient(t, store, lease.Config{TTL: watchTTL})
	l := acquire(t, c, permit(t, c, testKey, "held"))
	pgtest.Eventually(t, 10*time.Second, "the holder's listener", func() bool { return listening(t, pool) })
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 10*time.Second, "the listener to stop", func() bool { return !listening(t, pool) })
}
