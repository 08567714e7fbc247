package audit_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// preempt takes the session from the run holding it, for a fresh run, as a
// device with --on-busy preempt does.
func (h *history) preempt(holder string) lease.Token {
	h.t.Helper()
	run := uuid.New()
	g, err := h.store.Preempt(context.Background(), h.key, run, time.Minute, holder, "test", data.AcquireOptions{})
	if err != nil {
		h.t.Fatalf("Preempt(%s) = %v", holder, err)
	}
	h.rec.Started[data.PublicRunID(run)] = audit.StartedRun{Key: h.key, Fence: g.Fence, Holder: holder}
	return lease.Token{Key: h.key, RunID: run, Fence: g.Fence}
}

// TestCheckPassesAPreemptedHistory: a preempt replaces an unexpired lease
// on purpose; the checker counts it, still sees one owner at a time, and
// refuses nothing the protocol allowed: the preempted run's late write was
// refused, the preemptor's accepted.
func TestCheckPassesAPreemptedHistory(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	taker := h.preempt("phone pid 5")
	h.write(h.second, false) // the preempted run's late write: refused
	h.write(taker, true)
	h.ended(taker, audit.EndReleased)
	res := h.check()
	if !res.OK() {
		t.Fatalf("Check found violations in a correct history with a preempt: %v", res.Violations)
	}
	if res.Tally.Preempts != 1 || res.Tally.RunsStarted != 5 || res.Tally.Takeovers != 1 {
		t.Errorf("Tally = %+v, want 1 preempt, 5 runs started, 1 takeover", res.Tally)
	}
}

// TestCheckFailsABrokenPreempt: a preempt that reuses an old fence breaks
// "fences rise", and a write of the preempted run accepted after the
// preempt breaks "no stale write".
func TestCheckFailsABrokenPreempt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		inv     audit.Invariant
		want    string
		breakIt func(h *history)
	}{
		{"a preempt reuses an old fence", audit.FencesRise, "after fence", func(h *history) {
			h.exec(`BEGIN; SELECT set_config('lease.op', 'preempt', true);
				UPDATE lease.session_lease SET run_id = gen_random_uuid(), fence = ` + itoa(h.first.Fence) + `,
				       acquired_at = clock_timestamp() WHERE account_id = 'acme'; COMMIT`)
		}},
		{"a stale write accepted after a preempt", audit.NoStaleWrite, "stale fence", func(h *history) {
			h.preempt("phone pid 5")
			h.exec(`SELECT leasetop_test.unfenced_write($1, $2, $3, $4)`, h.key.Account, h.key.Session, h.second.PublicRunID(), h.second.Fence)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHistory(t)
			h.exec(installBreakage)
			tt.breakIt(h)
			failed := h.check().Failed(tt.inv)
			if len(failed) == 0 || !strings.Contains(failed[0].String(), tt.want) {
				t.Fatalf("Check's violations of invariant %s = %v, want one mentioning %q", tt.inv, failed, tt.want)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCheckFailsAPreemptedRunsLateWrite: a write of the preempted run
// accepted after the preempt breaks invariant 5, which names the run that
// replaced it.
func TestCheckFailsAPreemptedRunsLateWrite(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	h.exec(installBreakage)
	taker := h.preempt("phone pid 5")
	h.exec(`SELECT leasetop_test.unfenced_write($1, $2, $3, $4)`, h.key.Account, h.key.Session, h.second.PublicRunID(), h.second.Fence)
	failed := h.check().Failed(audit.ReplacedSilent)
	want := "after run " + taker.PublicRunID().String()[:8]
	if len(failed) == 0 || !strings.Contains(failed[0].String(), want) {
		t.Fatalf("violations of invariant %d = %v, want one mentioning %q", audit.ReplacedSilent, failed, want)
	}
}
