package audit_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestCheckCountsTakeoversAfterProcessLoss: a takeover after process loss
// is a taken_over of an expired lease whose holder's process was killed or
// frozen on purpose. On a constructed history (rows written straight into
// lease.event), preempts and hand-overs of a killed holder's run, and a
// takeover from a holder nobody killed, are takeovers or not, but none is
// after process loss (before, the demo counted 41 such beside 19
// takeovers in all).
func TestCheckCountsTakeoversAfterProcessLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	if _, err := demo.Setup(ctx, store); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	rec := audit.NewRecord([]string{"acme"}, 0)
	rec.Killed["phone pid 1"] = true
	rec.Killed["desktop pid 3"] = true
	rec.Killed["phone pid 4"] = true
	rec.Frozen["browser pid 5"] = true

	// Each session's history, in order: who acquires it, then how each next
	// run gets it from the one before (seconds after the start, the
	// previous lease's expiry relative to the event).
	type step struct {
		kind   data.Kind
		holder string
		expiry int // the replaced lease's expiry, seconds after the event (negative: expired before it)
	}
	sessions := map[string][]step{
		// A killed holder's expired lease taken over: counted.
		"killed": {{data.KindAcquired, "phone pid 1", 0}, {data.KindTakenOver, "browser pid 2", -1}},
		// A killed holder's unexpired lease preempted, then the preemptor's
		// (killed too) handed over: neither is a takeover.
		"preempted": {{data.KindAcquired, "desktop pid 3", 0}, {data.KindPreempted, "phone pid 4", 20}, {data.KindHandedOver, "desktop pid 6", 20}},
		// A frozen holder's expired lease taken over: counted.
		"frozen": {{data.KindAcquired, "browser pid 5", 0}, {data.KindTakenOver, "phone pid 7", -2}},
		// A takeover from a holder nobody killed or froze: a takeover, not
		// after process loss.
		"lapsed": {{data.KindAcquired, "desktop pid 8", 0}, {data.KindTakenOver, "phone pid 9", -1}},
	}
	fence := int64(0)
	for _, sess := range []string{"killed", "preempted", "frozen", "lapsed"} {
		var prevRun uuid.UUID
		var prevFence int64
		for i, st := range sessions[sess] {
			run := uuid.New()
			fence++
			var prev any
			var prevF any
			if i > 0 {
				prev, prevF = prevRun, prevFence
			}
			if _, err := store.Pool().Exec(ctx, `
				INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence,
				                         expires_at, prev_expires_at, holder)
				VALUES (clock_timestamp() + $1 * interval '1 minute', $2::text::lease.event_kind, 'acme', $3, $4, $5, $6, $7,
				        clock_timestamp() + $1 * interval '1 minute' + interval '30 s',
				        CASE WHEN $5::uuid IS NULL THEN NULL ELSE clock_timestamp() + $1 * interval '1 minute' + $8 * interval '1 s' END,
				        $9)`,
				fence, string(st.kind), sess, run, prev, fence, prevF, st.expiry, st.holder); err != nil {
				t.Fatalf("write %s's %s event: %v", sess, st.kind, err)
			}
			rec.Started[run] = audit.StartedRun{Key: data.Key{Account: "acme", Session: sess}, Fence: fence, Holder: st.holder}
			rec.Ended[run] = audit.EndReleased
			prevRun, prevFence = run, fence
		}
	}
	res, err := audit.Check(ctx, store, rec)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got, want := res.Tally.TakeoversAfterLoss, 2; got != want {
		t.Errorf("TakeoversAfterLoss = %d, want %d (the killed and the frozen holders' expired leases taken over)", got, want)
	}
	if got, want := res.Tally.Takeovers, 3; got != want {
		t.Errorf("Takeovers = %d, want %d", got, want)
	}
	if res.Tally.TakeoversAfterLoss > res.Tally.Takeovers {
		t.Errorf("TakeoversAfterLoss %d > Takeovers %d", res.Tally.TakeoversAfterLoss, res.Tally.Takeovers)
	}
	if got := res.Failed(audit.OneOwner); len(got) > 0 {
		t.Errorf("the constructed history broke invariant 1: %v", got)
	}
}
