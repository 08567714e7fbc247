package demo

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestChaosTargetsOnlyRunsTheDatabaseStillGrants: a chaos action picks among
// the runs devices reported started and not yet ended, but a device reports
// an end only after it happened. A run just released, one taken over while
// its device was frozen (a zombie about to report the loss) and one expired
// are no targets: killing their process would lose nothing, and the kill
// would show no takeover after process loss (the headless demo's check
// failed so, 1 run in 18, when its one kill hit a zombie just resumed).
func TestChaosTargetsOnlyRunsTheDatabaseStillGrants(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t).Store(t)
	r := &runner{store: store, active: map[uuid.UUID]*activeRun{}}
	p := &proc{name: "phone", account: "acme", alive: true}
	grant := func(session string, ttl time.Duration) (data.Key, uuid.UUID) {
		k := data.Key{Account: "acme", Session: session}
		run := uuid.New()
		g, err := store.Acquire(ctx, k, run, ttl, "phone")
		if err != nil {
			t.Fatalf("Acquire(%s): %v", k, err)
		}
		pub := data.PublicRunID(run)
		r.active[pub] = &activeRun{run: pub, key: k, fence: g.Fence, proc: p}
		return k, run
	}
	live, _ := grant("live", time.Minute)
	released, run := grant("released", time.Minute)
	if ok, err := store.Release(ctx, released, run); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	takenOver, _ := grant("taken-over", 500*time.Millisecond)
	expired, _ := grant("expired", 500*time.Millisecond)
	pgtest.WaitExpired(t, store.Pool(), takenOver)
	pgtest.WaitExpired(t, store.Pool(), expired)
	if _, err := store.Acquire(ctx, takenOver, uuid.New(), time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}

	ts := r.targets(ctx, nil)
	if len(ts) != 1 || ts[0].key != live {
		var got []string
		for _, a := range ts {
			got = append(got, a.key.String())
		}
		t.Errorf("targets = %v, want only %s (not %s, %s, %s)", got, live, released, takenOver, expired)
	}
	p.frozen = true
	if ts := r.targets(ctx, nil); len(ts) != 0 {
		t.Errorf("targets of a frozen device = %d runs, want none", len(ts))
	}
}
