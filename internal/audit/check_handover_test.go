package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
)

// TestCheckPassesAHandOver: a device asks the holder to hand over and the
// holder does, through the real protocol: the checker counts the hand-over
// and finds every invariant kept.
func TestCheckPassesAHandOver(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	ctx := context.Background()
	asker := uuid.New()
	if _, err := h.store.AskHandover(ctx, h.key, asker, time.Minute, "phone pid 5"); err != nil {
		t.Fatalf("AskHandover = %v", err)
	}
	ans, err := h.store.HandOver(ctx, h.key, h.second.RunID, time.Minute)
	if err != nil || ans.Outcome != data.AskHandedOver {
		t.Fatalf("HandOver = %+v, %v; want handed over", ans, err)
	}
	h.rec.Started[data.PublicRunID(asker)] = audit.StartedRun{Key: h.key, Fence: ans.Fence, Holder: "phone pid 5"}
	h.rec.Ended[data.PublicRunID(asker)] = audit.EndReleased
	h.release(asker)
	res := h.check()
	if !res.OK() {
		t.Fatalf("Check found violations in a correct hand-over: %v", res.Violations)
	}
	if res.Tally.HandOvers != 1 {
		t.Errorf("Tally.HandOvers = %d, want 1", res.Tally.HandOvers)
	}
}

// TestCheckFailsABrokenHandOver: a handed_over event for a run that never
// asked breaks invariant 7; an ask that never ended, and a fallback a
// device chose but never ran, break invariant 8.
func TestCheckFailsABrokenHandOver(t *testing.T) {
	t.Parallel()
	t.Run("no ask", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t)
		h.exec(`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence, expires_at, holder)
		        VALUES (clock_timestamp(), 'handed_over', $1, $2, gen_random_uuid(), $3, nextval('lease.fence_seq'), $4,
		                clock_timestamp() + interval '1 minute', 'intruder')`,
			h.key.Account, h.key.Session, h.second.PublicRunID(), h.second.Fence)
		failed := h.check().Failed(audit.HandOverAtomic)
		if len(failed) == 0 || !strings.Contains(failed[0].String(), "without a pending ask") {
			t.Fatalf("violations of invariant %d = %v, want a hand-over without an ask", audit.HandOverAtomic, failed)
		}
	})
	t.Run("ask never ended, fallback never ran", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t)
		if _, err := h.store.AskHandover(context.Background(), h.key, uuid.New(), time.Minute, "phone pid 5"); err != nil {
			t.Fatalf("AskHandover = %v", err)
		}
		h.rec.StoppedAt = time.Now().Add(time.Hour) // the demo stopped long after the ask's deadline
		h.rec.FallbacksChosen["phone pid 5"] = 1
		failed := h.check().Failed(audit.AsksEnded)
		if len(failed) != 2 || !strings.Contains(failed[0].String()+failed[1].String(), "never ended") ||
			!strings.Contains(failed[0].String()+failed[1].String(), "chose a fallback") {
			t.Fatalf("violations of invariant %d = %v, want the unended ask and the fallback never run", audit.AsksEnded, failed)
		}
	})
}
