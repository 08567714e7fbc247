package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestLimitPreemptByPriority: a preempt in an account at its limit takes
// the slot of the account's lowest-priority preemptible run whose priority
// is below its own, of another session: that run's lease ends as a forced
// release (event with the preemptor's login and a reason naming the
// preemptor and both priorities; its renewals fail), the preemptor is
// granted with the slot, and it learns when the victim says its work
// stopped. A run declared not preemptible, and runs of the same or a higher
// priority, are never taken: with none left the preempt is refused with a
// *LimitError. In a full pool the victim is a run of the pool.
func TestLimitPreemptByPriority(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := s.SetLimit(ctx, "acme", "", 3); err != nil {
		t.Fatal(err)
	}
	low, high, pinned, preemptor := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	for _, r := range []struct {
		n   int
		run uuid.UUID
		opt data.AcquireOptions
	}{
		{1, low, data.AcquireOptions{Priority: 1}},
		{2, high, data.AcquireOptions{Priority: 5}},
		{3, pinned, data.AcquireOptions{Priority: -1, NotPreemptible: true}},
	} {
		if _, err := s.AcquireWith(ctx, acmeKey(r.n), r.run, time.Hour, "holder", r.opt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Preempt(ctx, acmeKey(9), preemptor, time.Hour, "urgent", "page", data.AcquireOptions{Priority: 3}); err != nil {
		t.Fatalf("Preempt at priority 3 in a full account: %v, want the slot of the priority-1 run", err)
	}
	if _, err := s.Renew(ctx, acmeKey(1), low, time.Hour); !errors.Is(err, data.ErrNotHeld) {
		t.Fatalf("the victim's renewal: %v, want ErrNotHeld", err)
	}
	var actor, reason string
	if err := db.Conn(t).QueryRow(ctx, `SELECT actor, reason FROM lease.event
		WHERE kind = 'force_released' AND session_id = 'chat-1'`).Scan(&actor, &reason); err != nil {
		t.Fatalf("the victim's force_released event: %v", err)
	}
	if actor == "" || !strings.Contains(reason, data.PublicRunID(preemptor).String()) ||
		!strings.Contains(reason, "priority 3 over 1") || !strings.HasSuffix(reason, ": page") {
		t.Fatalf("the victim's event: actor %q reason %q, want the login and the preemptor, both priorities, the reason", actor, reason)
	}
	if pending, err := s.PreemptPending(ctx, acmeKey(9), preemptor); err != nil || !pending {
		t.Fatalf("PreemptPending before the victim stopped = %v, %v, want true", pending, err)
	}
	if news, err := s.PreemptStopped(ctx, acmeKey(1), low); err != nil || !news {
		t.Fatalf("the victim's PreemptStopped = %v, %v, want true", news, err)
	}
	if pending, err := s.PreemptPending(ctx, acmeKey(9), preemptor); err != nil || pending {
		t.Fatalf("PreemptPending after the victim stopped = %v, %v, want false", pending, err)
	}
	// Left: priority 5, not preemptible, and the preemptor's own 3.
	_, err := s.Preempt(ctx, acmeKey(10), uuid.New(), time.Hour, "second", "", data.AcquireOptions{Priority: 3})
	var le *data.LimitError
	if !errors.As(err, &le) || len(le.Holders) != 3 {
		t.Fatalf("Preempt at priority 3 with no lower preemptible run: %v, want a *LimitError naming 3 holders", err)
	}
	for n, run := range map[int]uuid.UUID{2: high, 3: pinned, 9: preemptor} {
		if _, err := s.Renew(ctx, acmeKey(n), run, time.Hour); err != nil {
			t.Fatalf("renew chat-%d after the refused preempt: %v", n, err)
		}
	}

	// A full pool: its own run is the victim, though the account has room.
	if _, err := s.SetLimit(ctx, "acme", "", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetLimit(ctx, "acme", "deep", 1); err != nil {
		t.Fatal(err)
	}
	deep := uuid.New()
	if _, err := s.AcquireWith(ctx, acmeKey(20), deep, time.Hour, "deep", data.AcquireOptions{Pool: "deep"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Preempt(ctx, acmeKey(21), uuid.New(), time.Hour, "deeper", "", data.AcquireOptions{Pool: "deep", Priority: 1}); err != nil {
		t.Fatalf("Preempt in a full pool: %v, want the pool run's slot", err)
	}
	if _, err := s.Renew(ctx, acmeKey(20), deep, time.Hour); !errors.Is(err, data.ErrNotHeld) {
		t.Fatalf("the pool's victim's renewal: %v, want ErrNotHeld", err)
	}
	if _, err := s.Renew(ctx, acmeKey(1), low, time.Hour); !errors.Is(err, data.ErrNotHeld) {
		t.Fatal("the first victim came back")
	}
	if _, err := s.Renew(ctx, acmeKey(2), high, time.Hour); err != nil {
		t.Fatalf("a run outside the pool lost its lease to the pool's preempt: %v", err)
	}
}

// TestLimitPreemptForSlotUndoneWithoutTheSlot: when a preempt for a slot
// has ended its victim's lease but cannot then take the slot (another
// call holds the slot's row locked: a grant racing for it), the preempt is
// undone: it returns the *LimitError and the victim keeps its lease, with
// no event.
func TestLimitPreemptForSlotUndoneWithoutTheSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := s.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	victim := uuid.New()
	mustAcquire(t, s, acmeKey(0), victim, time.Hour)
	locker, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Rollback(ctx)
	if _, err := locker.Exec(ctx, `SELECT FROM lease.limit_slot WHERE account_id = 'acme' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	_, err = s.Preempt(ctx, acmeKey(1), uuid.New(), time.Hour, "urgent", "", data.AcquireOptions{Priority: 5})
	if !errors.Is(err, data.ErrAtLimit) {
		t.Fatalf("Preempt while the slot's row is locked: %v, want ErrAtLimit", err)
	}
	if _, err := s.Renew(ctx, acmeKey(0), victim, time.Hour); err != nil {
		t.Fatalf("the victim of a preempt that got no slot: %v, want its lease kept", err)
	}
	var ended int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE kind = 'force_released'`).Scan(&ended); err != nil || ended != 0 {
		t.Fatalf("force_released events: %d, %v, want none", ended, err)
	}
}
