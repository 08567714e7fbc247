package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestReadingTheTableGivesNoCapability logs in as a lease_app, reads the
// victim's run id from lease.session_lease (as every lease_app may) and tries
// to act as the victim with it: release, renew, and a fence check left open
// in a transaction to freeze the lease. None may succeed, the lease must stay
// the victim's and unlocked, and the victim must keep renewing. Were the
// run's own id in the table (as in schema version 1, which upgrade_1.sql
// rewrites), all three would work.
func TestReadingTheTableGivesNoCapability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	victim := db.Store(t)
	k := data.Key{Account: "acme", Session: "victim"}
	secret := uuid.New()
	g := mustAcquire(t, victim, k, secret, time.Minute)

	app, login := connectAs(t, db, "lease_app")
	var shown uuid.UUID
	if err := app.QueryRow(ctx, `SELECT run_id FROM lease.session_lease WHERE account_id = $1 AND session_id = $2`,
		k.Account, k.Session).Scan(&shown); err != nil {
		t.Fatalf("read the victim's run id as %s: %v", login, err)
	}
	if shown != data.PublicRunID(secret) {
		t.Fatalf("table shows run %v, want the public id %v", shown, data.PublicRunID(secret))
	}

	var released bool
	if err := app.QueryRow(ctx, `SELECT lease.release($1, $2, $3)`, k.Account, k.Session, shown).Scan(&released); err != nil || released {
		t.Errorf("release with the run id read from the table as %s = %v, %v; want false", login, released, err)
	}
	var renewed *time.Time
	if err := app.QueryRow(ctx, `SELECT lease.renew($1, $2, $3, '1 hour')`, k.Account, k.Session, shown).Scan(&renewed); err != nil || renewed != nil {
		t.Errorf("renew with the run id read from the table as %s = %v, %v; want NULL", login, renewed, err)
	}

	// A fence check in a transaction the attacker keeps open.
	tx, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's end
	var fenced bool
	if err := tx.QueryRow(ctx, `SELECT lease.check_fence($1, $2, $3, $4)`, k.Account, k.Session, shown, g.Fence).Scan(&fenced); err != nil || fenced {
		t.Errorf("check_fence with the run id read from the table as %s = %v, %v; want false", login, fenced, err)
	}
	// The row must not be locked: an operator's lock with NOWAIT gets it at once.
	owner := db.Conn(t)
	_, err = owner.Exec(ctx, `SELECT 1 FROM lease.session_lease WHERE account_id = $1 AND session_id = $2 FOR UPDATE NOWAIT`,
		k.Account, k.Session)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		t.Errorf("the attacker's open check_fence holds the victim's lease row locked")
	} else if err != nil {
		t.Fatal(err)
	}

	if run, fence, ok := leaseOf(t, owner, k); !ok || run != data.PublicRunID(secret) || fence != g.Fence {
		t.Fatalf("lease after the attack = %v fence %d held %v, want the victim's %v fence %d", run, fence, ok, data.PublicRunID(secret), g.Fence)
	}
	if _, err := victim.Renew(ctx, k, secret, time.Minute); err != nil {
		t.Errorf("the victim's Renew after the attack: %v, want nil", err)
	}
}
