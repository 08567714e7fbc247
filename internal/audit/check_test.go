package audit_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/demo/device"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// history is a small real history on a fresh database: runs acquire, renew,
// write through the fence check, release, expire and are taken over, and are
// force-released, all through the real protocol.
type history struct {
	t      *testing.T
	store  *data.Store
	rec    *audit.Record
	key    data.Key
	first  lease.Token // expired and taken over by second
	second lease.Token // holds the session at the end
}

func newHistory(t *testing.T) *history {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	store := db.Store(t)
	if _, err := demo.Setup(ctx, store); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	h := &history{t: t, store: store, key: data.Key{Account: "acme", Session: "chat-1"}}
	h.rec = audit.NewRecord([]string{"acme"}, 0)

	// A run that writes and releases cleanly.
	clean := h.grant("desktop pid 1", time.Minute)
	h.write(clean, true)
	if ok, err := store.Release(ctx, h.key, clean.RunID); err != nil || !ok {
		t.Fatalf("Release = %v, %v; want true", ok, err)
	}
	h.ended(clean, audit.EndReleased)

	// A run that is force-released by an operator.
	forced := h.grant("phone pid 2", time.Minute)
	if ok, err := store.ForceRelease(ctx, h.key, forced.PublicRunID(), "test"); err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v; want true", ok, err)
	}
	h.write(forced, false) // its late write is refused by the fence check
	h.ended(forced, audit.EndLost)

	// A run whose lease expires (a killed process) and is taken over.
	h.first = h.grant("browser pid 3", 300*time.Millisecond)
	h.write(h.first, true)
	h.rec.Killed["browser pid 3"] = true
	h.rec.Ended[h.first.PublicRunID()] = audit.EndKilled
	h.second = h.takeOver("desktop pid 4")
	h.write(h.second, true)
	h.write(h.first, false) // the zombie's stale write: refused
	if _, err := store.Renew(ctx, h.key, h.first.RunID, time.Minute); err == nil {
		t.Fatal("Renew by the taken-over run succeeded; want ErrNotHeld")
	}
	h.ended(h.second, audit.EndReleased) // (its release is checked by the device's report)
	return h
}

// grant acquires the session for a fresh run, as a device does.
func (h *history) grant(holder string, ttl time.Duration) lease.Token {
	h.t.Helper()
	run := uuid.New()
	g, err := h.store.Acquire(context.Background(), h.key, run, ttl, holder)
	if err != nil {
		h.t.Fatalf("Acquire(%s) = %v", holder, err)
	}
	h.rec.Started[data.PublicRunID(run)] = audit.StartedRun{Key: h.key, Fence: g.Fence, Holder: holder}
	return lease.Token{Key: h.key, RunID: run, Fence: g.Fence}
}

// takeOver waits until the current lease has expired on the server clock
// and takes it over.
func (h *history) takeOver(holder string) lease.Token {
	h.t.Helper()
	pgtest.WaitExpired(h.t, h.store.Pool(), h.key)
	return h.grant(holder, time.Minute)
}

// write makes a fence-checked write exactly as a device does, and checks
// that it was accepted or refused as expected.
func (h *history) write(tok lease.Token, wantAccepted bool) {
	h.t.Helper()
	got, err := device.WriteChunk(context.Background(), h.store, tok, "test", 0)
	if err != nil || got != wantAccepted {
		h.t.Fatalf("WriteChunk(fence %d) = %v, %v; want %v", tok.Fence, got, err, wantAccepted)
	}
}

func (h *history) ended(tok lease.Token, how string) { h.rec.Ended[tok.PublicRunID()] = how }

// exec runs SQL on the history's database.
func (h *history) exec(sql string, args ...any) {
	h.t.Helper()
	if _, err := h.store.Pool().Exec(context.Background(), sql, args...); err != nil {
		h.t.Fatalf("exec %q: %v", sql, err)
	}
}

func (h *history) check() audit.Result {
	h.t.Helper()
	res, err := audit.Check(context.Background(), h.store, h.rec)
	if err != nil {
		h.t.Fatalf("Check: %v", err)
	}
	return res
}

func TestCheckPassesARealHistory(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	res := h.check()
	if !res.OK() {
		t.Fatalf("Check found violations in a correct history: %v", res.Violations)
	}
	want := audit.Tally{
		RunsStarted: 4, Takeovers: 1, TakeoversAfterLoss: 1, ZombieRenewalsRejected: 1,
		StaleWritesRefused: 2, WritesAccepted: 3, Releases: 1, ForcedReleases: 1,
	}
	if res.Tally != want {
		t.Errorf("Tally = %+v\nwant    %+v", res.Tally, want)
	}
}

// installBreakage creates the test-only functions that break the protocol
// on purpose, in a schema of the test's own database.
const installBreakage = `
CREATE SCHEMA leasetop_test;

-- A broken acquire: takes the session over whether or not the lease expired.
CREATE FUNCTION leasetop_test.grab(acct text, sess text, run uuid, who text) RETURNS void
LANGUAGE sql AS $$
    UPDATE lease.session_lease
       SET run_id = run, holder = who, fence = nextval('lease.fence_seq'),
           acquired_at = clock_timestamp(), renewed_at = clock_timestamp(),
           expires_at = clock_timestamp() + interval '1 minute'
     WHERE account_id = acct AND session_id = sess
$$;

-- A broken takeover that reuses an old fencing token.
CREATE FUNCTION leasetop_test.reuse_fence(acct text, sess text, run uuid, old_fence bigint) RETURNS void
LANGUAGE sql AS $$
    UPDATE lease.session_lease
       SET run_id = run, fence = old_fence, acquired_at = clock_timestamp(), renewed_at = clock_timestamp(),
           expires_at = clock_timestamp() + interval '1 minute'
     WHERE account_id = acct AND session_id = sess
$$;

-- A history that records a second acquisition while the first still holds.
CREATE FUNCTION leasetop_test.phantom_acquire(acct text, sess text, run uuid) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
    VALUES (clock_timestamp(), 'acquired', acct, sess, run, nextval('lease.fence_seq'),
            clock_timestamp() + interval '1 minute', 'phantom')
$$;

-- A protected resource that forgot the fence check.
CREATE FUNCTION leasetop_test.unfenced_write(acct text, sess text, run uuid, f bigint) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO leasetop_demo.output (account_id, session_id, run_id, fence, device, chunk, accepted)
    VALUES (acct, sess, run, f, 'unfenced', 99, true)
$$;
`

func TestCheckFailsWhenAnInvariantIsBroken(t *testing.T) {
	t.Parallel()
	// Each breakage may also leave a run that never ended (the intruder's):
	// also lists the invariants it may break besides inv.
	tests := []struct {
		name    string
		inv     audit.Invariant
		also    []audit.Invariant
		want    string
		breakIt func(h *history)
	}{
		{"double grant while the lease is unexpired", audit.OneOwner, []audit.Invariant{audit.RunsEnded}, "two owners for", func(h *history) {
			h.exec(`SELECT leasetop_test.grab($1, $2, $3, 'intruder')`, h.key.Account, h.key.Session, uuid.New())
		}},
		{"acquired while another run holds", audit.OneOwner, []audit.Invariant{audit.RunsEnded}, "had not released it", func(h *history) {
			h.exec(`SELECT leasetop_test.phantom_acquire($1, $2, $3)`, h.key.Account, h.key.Session, uuid.New())
		}},
		{"a device believed it held a run never granted", audit.OneOwner, nil, "never granted that", func(h *history) {
			run := uuid.New()
			h.rec.Started[run] = audit.StartedRun{Key: h.key, Fence: 999, Holder: "liar pid 9"}
			h.rec.Ended[run] = audit.EndReleased
		}},
		{"a takeover reuses an old fence", audit.FencesRise, []audit.Invariant{audit.RunsEnded}, "after fence", func(h *history) {
			h.exec(`UPDATE lease.session_lease SET expires_at = clock_timestamp() WHERE account_id = $1`, h.key.Account)
			h.exec(`SELECT leasetop_test.reuse_fence($1, $2, $3, $4)`, h.key.Account, h.key.Session, uuid.New(), h.first.Fence)
		}},
		{"a stale fence is accepted after a takeover", audit.NoStaleWrite, nil, "stale fence", func(h *history) {
			h.exec(`SELECT leasetop_test.unfenced_write($1, $2, $3, $4)`, h.key.Account, h.key.Session, h.first.PublicRunID(), h.first.Fence)
		}},
		{"a write with a fence its run never held", audit.NoStaleWrite, nil, "never held the session", func(h *history) {
			h.exec(`SELECT leasetop_test.unfenced_write($1, $2, $3, $4)`, h.key.Account, h.key.Session, uuid.New(), h.second.Fence)
		}},
		{"a started run never ended", audit.RunsEnded, nil, "never ended", func(h *history) {
			delete(h.rec.Ended, h.second.PublicRunID())
		}},
		{"a run's process crashed", audit.RunsEnded, nil, "exited", func(h *history) {
			h.rec.Ended[h.second.PublicRunID()] = audit.EndCrashed + ": desktop pid 4 exited (exit status 2)"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHistory(t)
			h.exec(installBreakage)
			tt.breakIt(h)
			res := h.check()
			failed := res.Failed(tt.inv)
			if len(failed) == 0 {
				t.Fatalf("Check found no violation of invariant %d (%s); violations: %v", tt.inv, tt.inv, res.Violations)
			}
			if !strings.Contains(failed[0].String(), tt.want) {
				t.Errorf("violation = %q, want it to mention %q", failed[0], tt.want)
			}
			for _, v := range res.Violations {
				if v.Invariant != tt.inv && !slices.Contains(tt.also, v.Invariant) {
					t.Errorf("unexpected violation of invariant %d: %s", v.Invariant, v)
				}
			}
		})
	}
}

// TestCheckScopesToTheDemosAccounts: another tenant's history on a shared
// database is none of the demo's business.
func TestCheckScopesToTheDemosAccounts(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	h.exec(installBreakage)
	other := data.Key{Account: "someone-else", Session: "chat-1"}
	if _, err := h.store.Acquire(context.Background(), other, uuid.New(), time.Minute, "x"); err != nil {
		t.Fatal(err)
	}
	h.exec(`SELECT leasetop_test.grab($1, $2, $3, 'intruder')`, other.Account, other.Session, uuid.New())
	if res := h.check(); !res.OK() {
		t.Errorf("Check judged another account's history: %v", res.Violations)
	}
}
