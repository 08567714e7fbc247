package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
)

// limitHistory is newHistory with a limit of 1 live run on acme, set while
// its last run holds chat-1.
func limitHistory(t *testing.T) (*history, data.Key) {
	t.Helper()
	h := newHistory(t)
	if _, err := h.store.SetLimit(context.Background(), "acme", "", 1); err != nil {
		t.Fatalf("SetLimit(acme, 1) = %v", err)
	}
	return h, data.Key{Account: "acme", Session: "chat-2"}
}

// TestCheckPassesALimit: with a limit of 1, a second conversation is
// refused while the first is held and granted once it is released,
// through the real protocol: invariant 9 holds, the refusal is counted and
// the peak is 1 of 1.
func TestCheckPassesALimit(t *testing.T) {
	t.Parallel()
	h, other := limitHistory(t)
	ctx := context.Background()
	_, err := h.store.Acquire(ctx, other, uuid.New(), time.Minute, "phone pid 7")
	if !errors.Is(err, data.ErrAtLimit) {
		t.Fatalf("Acquire(%s) at the limit = %v, want ErrAtLimit", other, err)
	}
	h.release(h.second.RunID)
	run := uuid.New()
	g, err := h.store.Acquire(ctx, other, run, time.Minute, "phone pid 7")
	if err != nil {
		t.Fatalf("Acquire(%s) after the release = %v", other, err)
	}
	h.rec.Started[data.PublicRunID(run)] = audit.StartedRun{Key: other, Fence: g.Fence, Holder: "phone pid 7"}
	h.rec.Ended[data.PublicRunID(run)] = audit.EndReleased
	res := h.check()
	if !res.OK() {
		t.Fatalf("Check found violations in a kept limit: %v", res.Violations)
	}
	if res.Tally.LimitRefusals != 1 {
		t.Errorf("Tally.LimitRefusals = %d, want 1", res.Tally.LimitRefusals)
	}
	if got, want := res.Limits["acme"], (audit.LimitPeak{Slots: 1, Peak: 1}); got != want {
		t.Errorf("Limits[acme] = %+v, want %+v", got, want)
	}
	if p := h.peak("acme"); p.Most != 1 {
		t.Errorf("PeakHolders(acme) = %+v, want at most 1 live at once", p)
	}
}

// peak is audit.PeakHolders on the history's database.
func (h *history) peak(account string) audit.Peak {
	h.t.Helper()
	p, err := audit.PeakHolders(context.Background(), h.store, account)
	if err != nil {
		h.t.Fatalf("PeakHolders(%s): %v", account, err)
	}
	return p
}

// TestCheckFailsABrokenLimit: a grant of a second conversation while the
// first's run holds the account's only slot breaks invariant 9.
func TestCheckFailsABrokenLimit(t *testing.T) {
	t.Parallel()
	h, other := limitHistory(t)
	h.exec(`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
	        VALUES (clock_timestamp(), 'acquired', $1, $2, gen_random_uuid(), nextval('lease.fence_seq'),
	                clock_timestamp() + interval '1 minute', 'intruder')`, other.Account, other.Session)
	failed := h.check().Failed(audit.LimitKept)
	if len(failed) != 1 || !strings.Contains(failed[0].String(), "limit of 1 and 1 other runs held it") {
		t.Fatalf("violations of invariant %d = %v, want one grant above the limit", audit.LimitKept, failed)
	}
	if p := h.peak("acme"); p.Most != 2 {
		t.Errorf("PeakHolders(acme) = %+v, want 2 live at once (chat-1's run and the intruder)", p)
	}
}

// brokenTakeSlots replaces lease.take_slots with one that never takes a
// slot (it answers "no limit applies"), as internal/demo's test of a broken
// limit does.
const brokenTakeSlots = `
CREATE OR REPLACE FUNCTION lease.take_slots(account_id text, session_id text, pool text, now_ timestamptz)
RETURNS lease.limit_slot[]
LANGUAGE sql VOLATILE
AS $fn$ SELECT NULL::lease.limit_slot[] $fn$`

// TestCheckFailsAWriteWithoutASlot: with the account's only slot free, a
// run granted its conversation without taking the slot (a take_slots
// broken on purpose) writes through the fence check, which accepts it (the
// fence is the session's). Never more than one run lived, so invariant 9
// holds; the fence audit (invariant 3) catches the write of a run that held
// no slot. The same write from a run that took its slot passes.
func TestCheckFailsAWriteWithoutASlot(t *testing.T) {
	t.Parallel()
	h, other := limitHistory(t)
	h.release(h.second.RunID)
	h.key = other
	kept := h.grant("phone pid 7", time.Minute)
	h.write(kept, true)
	h.release(kept.RunID)
	h.ended(kept, audit.EndReleased)
	if res := h.check(); !res.OK() {
		t.Fatalf("Check found violations before the broken grant: %v", res.Violations)
	}

	h.exec(brokenTakeSlots)
	slotless := h.grant("tablet pid 8", time.Minute)
	h.write(slotless, true)
	h.release(slotless.RunID)
	h.ended(slotless, audit.EndReleased)
	res := h.check()
	if failed := res.Failed(audit.LimitKept); len(failed) != 0 {
		t.Errorf("violations of invariant %d = %v, want none: one run at a time", audit.LimitKept, failed)
	}
	failed := res.Failed(audit.NoStaleWrite)
	if len(failed) != 1 || !strings.Contains(failed[0].String(), "without a slot of account acme's limit") {
		t.Fatalf("violations of invariant %d = %v, want the slotless run's write", audit.NoStaleWrite, failed)
	}
	if p := h.peak("acme"); p.Most != 1 {
		t.Errorf("PeakHolders(acme) = %+v, want 1", p)
	}
}
