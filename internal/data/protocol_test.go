package data_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestUnrelatedKeysDoNotInterfere(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, _ pgtest.DB, s *data.Store) {
		ctx := context.Background()
		keys := []data.Key{{"acct1", "s1"}, {"acct1", "s2"}, {"acct2", "s1"}}
		for _, k := range keys {
			mustAcquire(t, s, k, uuid.New(), time.Minute)
		}
		snap, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(snap.Leases), len(keys); got != want {
			t.Fatalf("Snapshot has %d leases, want %d", got, want)
		}
	})
}

func TestHeldLeaseIsRefused(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, _ pgtest.DB, s *data.Store) {
		ctx := context.Background()
		k := data.Key{Account: "a", Session: "s"}
		a := uuid.New()
		ga := mustAcquire(t, s, k, a, time.Minute)
		_, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "B")
		var held *data.HeldError
		if !errors.As(err, &held) || !errors.Is(err, data.ErrHeld) {
			t.Fatalf("Acquire by B err = %v, want *HeldError", err)
		}
		if held.RunID != data.PublicRunID(a) || held.Fence != ga.Fence || held.Remaining <= 0 || held.Remaining > time.Minute {
			t.Errorf("HeldError = %+v, want run %v fence %d remaining in (0, 1m]", held, a, ga.Fence)
		}
	})
}

func TestExpiredLeaseIsTakenOver(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		conn := db.Conn(t)
		k := data.Key{Account: "a", Session: "s"}
		a, b := uuid.New(), uuid.New()
		ga := mustAcquire(t, s, k, a, 20*time.Millisecond)
		pgtest.WaitServerPast(t, conn, ga.ExpiresAt)
		gb := mustAcquire(t, s, k, b, time.Minute)
		if gb.Fence <= ga.Fence {
			t.Errorf("takeover fence = %d, want > %d", gb.Fence, ga.Fence)
		}
		evs := events(t, s)
		if got, want := kinds(evs), []data.Kind{data.KindAcquired, data.KindTakenOver}; !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		to := evs[1]
		if to.RunID != data.PublicRunID(b) || to.PrevRunID != data.PublicRunID(a) || to.Fence != gb.Fence || to.PrevFence != ga.Fence ||
			!to.PrevExpiresAt.Equal(ga.ExpiresAt) {
			t.Errorf("taken_over event = %+v, want run %v prev %v fence %d prev fence %d", to, b, a, gb.Fence, ga.Fence)
		}
	})
}

func TestLateRenewAndReleaseAfterTakeover(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		ctx := context.Background()
		conn := db.Conn(t)
		k := data.Key{Account: "a", Session: "s"}
		a, b := uuid.New(), uuid.New()
		ga := mustAcquire(t, s, k, a, 20*time.Millisecond)
		pgtest.WaitServerPast(t, conn, ga.ExpiresAt)

		// A's own late heartbeat, before anyone took over, must not revive it.
		if _, err := s.Renew(ctx, k, a, time.Minute); !errors.Is(err, data.ErrNotHeld) {
			t.Fatalf("Renew of expired lease err = %v, want ErrNotHeld", err)
		}
		gb := mustAcquire(t, s, k, b, time.Minute)
		if _, err := s.Renew(ctx, k, a, time.Minute); !errors.Is(err, data.ErrNotHeld) {
			t.Fatalf("late Renew by A err = %v, want ErrNotHeld", err)
		}
		if ok, err := s.Release(ctx, k, a); err != nil || ok {
			t.Fatalf("late Release by A = %v, %v; want false, nil", ok, err)
		}
		if run, fence, ok := leaseOf(t, conn, k); !ok || run != data.PublicRunID(b) || fence != gb.Fence {
			t.Fatalf("lease after A's late calls = %v %d %v, want B's %v %d", run, fence, ok, b, gb.Fence)
		}
		evs := events(t, s)
		want := []data.Kind{data.KindAcquired, data.KindRenewRejected, data.KindTakenOver, data.KindRenewRejected}
		if got := kinds(evs); !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		if r := evs[1]; r.RunID != data.PublicRunID(a) || r.Reason != "lease expired" {
			t.Errorf("first renew_rejected = run %v reason %q, want run %v reason %q", r.RunID, r.Reason, a, "lease expired")
		}
		if r := evs[3]; r.RunID != data.PublicRunID(a) || r.Reason != "held by run "+data.PublicRunID(b).String() {
			t.Errorf("second renew_rejected = run %v reason %q, want run %v held by %v", r.RunID, r.Reason, a, b)
		}

		// B releases; a second release is the idempotent "nothing to release".
		for i, want := range []bool{true, false} {
			if ok, err := s.Release(ctx, k, b); err != nil || ok != want {
				t.Fatalf("Release #%d by B = %v, %v; want %v, nil", i+1, ok, err, want)
			}
		}
	})
}

func TestAcquireRetryIsIdempotent(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, _ pgtest.DB, s *data.Store) {
		ctx := context.Background()
		k := data.Key{Account: "a", Session: "s"}
		a := uuid.New()
		first := mustAcquire(t, s, k, a, time.Minute)
		again, err := s.Acquire(ctx, k, a, time.Minute, "A")
		if err != nil {
			t.Fatalf("retry Acquire err = %v, want nil", err)
		}
		if again != first {
			t.Errorf("retry grant = %+v, want the same %+v", again, first)
		}
		if got := kinds(events(t, s)); !slices.Equal(got, []data.Kind{data.KindAcquired}) {
			t.Errorf("events = %v, want one acquired", got)
		}
	})
}

func TestForceRelease(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		ctx := context.Background()
		conn := db.Conn(t)
		k := data.Key{Account: "a", Session: "s"}
		a := uuid.New()
		mustAcquire(t, s, k, a, time.Minute)

		if ok, err := s.ForceRelease(ctx, k, uuid.New(), "stale"); err != nil || ok {
			t.Fatalf("ForceRelease with a stale run = %v, %v; want false, nil", ok, err)
		}
		if _, _, ok := leaseOf(t, conn, k); !ok {
			t.Fatal("stale ForceRelease deleted the lease")
		}
		if ok, err := s.ForceRelease(ctx, k, data.PublicRunID(a), "stuck run"); err != nil || !ok {
			t.Fatalf("ForceRelease with the shown run = %v, %v; want true, nil", ok, err)
		}
		mustAcquire(t, s, k, uuid.New(), time.Minute)
		// The nil run id is a value like any other: no run holds it.
		if ok, err := s.ForceRelease(ctx, k, uuid.Nil, "nil"); err != nil || ok {
			t.Fatalf("ForceRelease with the nil run id = %v, %v; want false, nil", ok, err)
		}
		if _, _, ok := leaseOf(t, conn, k); !ok {
			t.Fatal("ForceRelease with the nil run id deleted the lease")
		}
		if ok, err := s.ForceReleaseAny(ctx, k, ""); err != nil || !ok {
			t.Fatalf("ForceReleaseAny = %v, %v; want true, nil", ok, err)
		}
		evs := events(t, s)
		want := []data.Kind{data.KindAcquired, data.KindForceReleased, data.KindAcquired, data.KindForceReleased}
		if got := kinds(evs); !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		if e := evs[1]; e.Actor != "postgres" || e.Reason != "stuck run" || e.RunID != data.PublicRunID(a) {
			t.Errorf("force_released event actor %q reason %q run %v, want postgres, %q, %v", e.Actor, e.Reason, e.RunID, "stuck run", a)
		}
		// A later plain release in the same session is not mislabelled as forced.
		b := uuid.New()
		mustAcquire(t, s, k, b, time.Minute)
		if ok, _ := s.Release(ctx, k, b); !ok {
			t.Fatal("Release by holder failed")
		}
		if e := events(t, s); e[len(e)-1].Kind != data.KindReleased {
			t.Errorf("last event = %v, want released", e[len(e)-1].Kind)
		}
	})
}

func TestFenceRisesAcrossDeletes(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, _ pgtest.DB, s *data.Store) {
		k := data.Key{Account: "a", Session: "s"}
		var last int64
		for i := range 5 {
			run := uuid.New()
			g := mustAcquire(t, s, k, run, time.Minute)
			if g.Fence <= last {
				t.Fatalf("acquire #%d fence %d, want > %d", i, g.Fence, last)
			}
			last = g.Fence
			if _, err := s.Renew(context.Background(), k, run, time.Minute); err != nil {
				t.Fatal(err)
			}
			if g2, _ := s.Acquire(context.Background(), k, run, time.Minute, ""); g2.Fence != g.Fence {
				t.Fatalf("renew or retry changed the fence: %d -> %d", g.Fence, g2.Fence)
			}
			if ok, _ := s.Release(context.Background(), k, run); !ok {
				t.Fatal("release failed")
			}
		}
	})
}

func TestPruneEvents(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, _ pgtest.DB, s *data.Store) {
		ctx := context.Background()
		mustAcquire(t, s, data.Key{Account: "a", Session: "s"}, uuid.New(), time.Minute)
		var n int64
		if err := s.Pool().QueryRow(ctx, `SELECT lease.prune_events('1 hour')`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("prune_events('1 hour') = %d, %v; want 0", n, err)
		}
		if err := s.Pool().QueryRow(ctx, `SELECT lease.prune_events('0')`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("prune_events('0') = %d, %v; want 1", n, err)
		}
	})
}
