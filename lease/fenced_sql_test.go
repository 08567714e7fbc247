package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

// The database/sql forms: FencedSQLTx writes while the lease is held, inside
// the same bound as FencedTx, and refuses after the loss; CheckSQL refuses a
// stale token in a transaction of the caller's own.
func TestFencedSQLTx(t *testing.T) {
	t.Parallel()
	pdb := pgtest.New(t)
	store := pdb.Store(t)
	ctx := context.Background()
	db, err := sql.Open("pgx", pdb.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE doc (who text, fence bigint)`); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, store, lease.Config{TTL: 10 * time.Second, RenewInterval: 300 * time.Millisecond})
	l := acquire(t, c, permit(t, c, testKey, "h"))
	err = l.FencedSQLTx(ctx, db, func(ctx context.Context, tx *sql.Tx) error {
		var idle string
		if err := tx.QueryRowContext(ctx, `SELECT current_setting('idle_in_transaction_session_timeout')`).Scan(&idle); err != nil {
			return err
		}
		if idle == "0" {
			t.Error("inside FencedSQLTx idle_in_transaction_session_timeout = 0, want the bound")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO doc VALUES ('held', $1)`, l.Fence())
		return err
	})
	if err != nil {
		t.Fatalf("FencedSQLTx while held err = %v", err)
	}
	stale := l.Token()
	leasetest.ForceLoss(t, store, l)
	err = l.FencedSQLTx(ctx, db, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO doc VALUES ('lost', $1)`, l.Fence())
		return err
	})
	if !errors.Is(err, lease.ErrStale) || !errors.Is(err, lease.ErrForceReleased) {
		t.Errorf("FencedSQLTx after the loss err = %v, want ErrStale with the forced release as cause", err)
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := stale.CheckSQL(ctx, tx); !errors.Is(err, lease.ErrStale) {
		t.Errorf("CheckSQL with the lost run's token err = %v, want ErrStale", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM doc WHERE who = 'held'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("doc rows written while held = %d (%v), want 1", n, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM doc`).Scan(&n); err != nil || n != 1 {
		t.Errorf("doc rows = %d (%v), want only the one written while held", n, err)
	}
}
