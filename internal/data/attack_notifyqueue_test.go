package data_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestForcedReleaseNotifiesAfterItsCommit: any role that may connect can
// fill PostgreSQL's NOTIFY queue (LISTEN, keep a transaction open, pg_notify
// 8 KB payloads: 8 GB in about a minute here), and a transaction that
// notifies then fails at its commit (54000). A forced release, the
// operator's way out, must therefore not notify inside its transaction: it
// commits, and its notification follows in a transaction of its own, as
// Acquire's and Release's do. Filling the queue takes too long and too much
// disk for a test, so this one checks that mechanism: as a CONNECT-only
// login holds a LISTEN transaction open, a lease_admin's ForceRelease has
// committed with nothing notified when its after-commit hook runs, and its
// one notification arrives after that. Were it the trigger's, sent inside
// the forced release's transaction, a full queue would fail the release.
func TestForcedReleaseNotifiesAfterItsCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	k := data.Key{Account: "acme", Session: "stuck"}
	holder := uuid.New()
	mustAcquire(t, owner, k, holder, time.Minute)

	// The attacker's half that makes the queue grow: a listener that never
	// reads, because it stays in a transaction.
	attacker, login := connectAs(t, db, "")
	if _, err := attacker.Exec(ctx, "LISTEN junk"); err != nil {
		t.Fatalf("LISTEN as %s: %v", login, err)
	}
	tx, err := attacker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's end
	if _, err := tx.Exec(ctx, `SELECT pg_notify('junk', repeat('x', 7990))`); err != nil {
		t.Fatalf("pg_notify as %s: %v", login, err)
	}

	drain := collect(t, db.Conn(t), db.Conn(t))
	drain() // the acquire
	dsn, admin := pgtest.Login(t, db, "lease_admin")
	ops, err := data.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Close()
	hooked := false
	data.SetAfterCommit(ops, func() {
		hooked = true
		if _, _, held := leaseOf(t, db.Conn(t), k); held {
			t.Errorf("at the forced release's after-commit hook the lease is still held")
		}
		if got := drain(); len(got) != 0 {
			t.Errorf("the forced release notified inside its transaction: %q", got)
		}
	})
	if ok, err := ops.ForceRelease(ctx, k, data.PublicRunID(holder), "stuck"); err != nil || !ok {
		t.Fatalf("ForceRelease as %s = %v, %v; want true", admin, ok, err)
	}
	if !hooked {
		t.Errorf("ForceRelease never reached an after-commit point: it notifies inside its transaction")
	}
	got := drain()
	if len(got) != 1 {
		t.Fatalf("after ForceRelease returned, %d notifications %q, want its one force_released", len(got), got)
	}
	var ev struct {
		Kind   string `json:"kind"`
		RunID  string `json:"run_id"`
		Actor  string `json:"actor"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(got[0]), &ev); err != nil || ev.Kind != "force_released" ||
		ev.RunID != data.PublicRunID(holder).String() || ev.Actor != admin || ev.Reason != "stuck" {
		t.Errorf("the notification is %s (%v), want the force_released of run %v by %s, reason stuck", got[0], err, data.PublicRunID(holder), admin)
	}

}
