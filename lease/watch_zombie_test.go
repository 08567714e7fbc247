package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// heldAndWatched acquires key on c and waits until its holder watch listens
// and the renewal that the listener's start asks for is done, so that the
// only thing that can look at the row after the test's own write is the
// watch's check.
func heldAndWatched(t *testing.T, db pgtest.DB, c *lease.Client, key lease.Key) *lease.Lease {
	t.Helper()
	l := acquire(t, c, permit(t, c, key, "desktop"))
	granted := l.State().ExpiresAt
	pool := db.Pool(t)
	pgtest.Eventually(t, 10*time.Second, "the holder's listener", func() bool { return listening(t, pool) })
	pgtest.Eventually(t, 10*time.Second, "the renewal at the listener's start", func() bool {
		return l.State().ExpiresAt.After(granted)
	})
	return l
}

// zombies returns the renew_rejected events that name run.
func zombies(t *testing.T, s *data.Store, key lease.Key, run string) []data.Event {
	t.Helper()
	evs, err := s.EventsFor(context.Background(), key, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []data.Event
	for _, e := range evs {
		if e.Kind == data.KindRenewRejected && e.RunID.String() == run {
			out = append(out, e)
		}
	}
	return out
}

// TestHolderWatchWritesNoZombieLine: the holder watch learns of a preempt or
// a forced release by reading the row, not by renewing: the stopped run's
// Context is cancelled with the right cause (before its first renewal, 20 s
// away), and the history holds no renew_rejected ("zombie") event naming it.
func TestHolderWatchWritesNoZombieLine(t *testing.T) {
	for _, how := range []string{"preempt", "force"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			store := db.Store(t)
			desktop := newClient(t, db.Store(t), lease.Config{TTL: watchTTL})
			phone := newClient(t, db.Store(t), lease.Config{TTL: watchTTL})
			acquired := time.Now()
			held := heldAndWatched(t, db, desktop, testKey)
			want, kind := lease.ErrPreempted, data.KindPreempted
			if how == "preempt" {
				p, err := phone.Preempt(ctx, permit(t, phone, testKey, "phone"), "moved to the phone")
				if err != nil {
					t.Fatalf("Preempt: %v", err)
				}
				defer p.Release(ctx)
			} else {
				want, kind = lease.ErrForceReleased, data.KindForceReleased
				if _, err := store.ForceRelease(ctx, testKey, held.RunID(), "operator"); err != nil {
					t.Fatalf("ForceRelease: %v", err)
				}
			}
			cause := waitDone(t, held, watchTTL/3*3/4)
			var lost *lease.LostError
			if !errors.As(cause, &lost) || !errors.Is(cause, want) || lost.By.Kind != kind {
				t.Fatalf("cause = %v, want a *LostError with %v naming the %s event", cause, want, kind)
			}
			if at := held.State().Since; at.Sub(acquired) >= watchTTL/3 {
				t.Errorf("lost %s after the grant: the heartbeat noticed, not the watch", at.Sub(acquired))
			}
			if z := zombies(t, store, testKey, held.RunID().String()); len(z) > 0 {
				t.Errorf("the stopped run has %d renew_rejected events, want none: %+v", len(z), z)
			}
		})
	}
}
