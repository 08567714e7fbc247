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

// enqueue takes a ticket in the session's queue for a fresh run, as a
// device with the queue strategy does, and returns the run's secret id.
func (h *history) enqueue(holder string) uuid.UUID {
	h.t.Helper()
	run := uuid.New()
	if _, err := h.store.Enqueue(context.Background(), h.key, run, time.Minute, holder); err != nil {
		h.t.Fatalf("Enqueue(%s) = %v", holder, err)
	}
	return run
}

// release releases a run's lease, as a device ending its run does.
func (h *history) release(run uuid.UUID) {
	h.t.Helper()
	if ok, err := h.store.Release(context.Background(), h.key, run); err != nil || !ok {
		h.t.Fatalf("Release = %v, %v; want true", ok, err)
	}
}

// TestCheckPassesAQueueServedInOrder: two devices queue behind the holder
// and get the session in the order they queued; the checker counts both
// tickets and finds nothing wrong.
func TestCheckPassesAQueueServedInOrder(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	first, second := h.enqueue("phone pid 5"), h.enqueue("browser pid 6")
	h.release(h.second.RunID)
	for _, run := range []uuid.UUID{first, second} {
		g, err := h.store.Acquire(context.Background(), h.key, run, time.Minute, "queued")
		if err != nil {
			t.Fatalf("Acquire in queue order = %v", err)
		}
		h.rec.Started[data.PublicRunID(run)] = audit.StartedRun{Key: h.key, Fence: g.Fence, Holder: "queued"}
		h.rec.Ended[data.PublicRunID(run)] = audit.EndReleased
		h.release(run)
	}
	res := h.check()
	if !res.OK() {
		t.Fatalf("Check found violations in a queue served in order: %v", res.Violations)
	}
	if res.Tally.QueueWaits != 2 {
		t.Errorf("Tally.QueueWaits = %d, want 2", res.Tally.QueueWaits)
	}
}

// TestCheckFailsAQueueJumped: a grant recorded for the second ticket's run
// while the first ticket was live (it was cancelled later, so it was live
// then) breaks "queues served in order".
func TestCheckFailsAQueueJumped(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	first := h.enqueue("phone pid 5")
	second := h.enqueue("browser pid 6")
	h.release(h.second.RunID)
	h.exec(`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
	        VALUES (clock_timestamp(), 'acquired', $1, $2, $3, nextval('lease.fence_seq'), clock_timestamp() + interval '1 minute', 'jumper')`,
		h.key.Account, h.key.Session, data.PublicRunID(second))
	if ok, err := h.store.CancelTicket(context.Background(), h.key, first); err != nil || !ok {
		t.Fatalf("CancelTicket = %v, %v; want true", ok, err)
	}
	failed := h.check().Failed(audit.QueueOrder)
	if len(failed) == 0 || !strings.Contains(failed[0].String(), "left the queue: cancelled") {
		t.Fatalf("violations of invariant %d = %v, want one naming the cancelled ticket", audit.QueueOrder, failed)
	}
}

// TestCheckFailsAQueueJumpedAheadOfACleared: the jump of
// TestCheckFailsAQueueJumped, where the ticket jumped was cleared by an
// operator afterwards: it was live until then, so the grant broke the order.
func TestCheckFailsAQueueJumpedAheadOfACleared(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	first := h.enqueue("phone pid 5")
	second := h.enqueue("browser pid 6")
	h.release(h.second.RunID)
	h.exec(`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
	        VALUES (clock_timestamp(), 'acquired', $1, $2, $3, nextval('lease.fence_seq'), clock_timestamp() + interval '1 minute', 'jumper')`,
		h.key.Account, h.key.Session, data.PublicRunID(second))
	if ok, err := h.store.ClearTicket(context.Background(), h.key, data.PublicRunID(first), "INC-3"); err != nil || !ok {
		t.Fatalf("ClearTicket = %v, %v; want true", ok, err)
	}
	failed := h.check().Failed(audit.QueueOrder)
	if len(failed) == 0 || !strings.Contains(failed[0].String(), "left the queue: cleared: INC-3") {
		t.Fatalf("violations of invariant %d = %v, want one naming the cleared ticket", audit.QueueOrder, failed)
	}
}
