package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// BoundTx bounds a statement and an idle pause of the transaction on the
// server, only for that transaction, and OutlivedBound recognises both
// ends. A bound under a millisecond is refused.
func TestBoundTx(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	// bounded begins a transaction bounded by d on a connection of its own.
	bounded := func(t *testing.T, d time.Duration) (*pgx.Conn, pgx.Tx) {
		conn := db.Conn(t)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(ctx) })
		if err := data.BoundTx(ctx, tx, d); err != nil {
			t.Fatalf("BoundTx(%v) err = %v", d, err)
		}
		return conn, tx
	}
	t.Run("statement", func(t *testing.T) {
		_, tx := bounded(t, 100*time.Millisecond)
		if _, err := tx.Exec(ctx, `SELECT pg_sleep(5)`); !data.OutlivedBound(err) {
			t.Errorf("a statement longer than the bound err = %v, want OutlivedBound", err)
		}
	})
	t.Run("idle", func(t *testing.T) {
		_, tx := bounded(t, 100*time.Millisecond)
		var pid int
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pgtest.WaitBackendGone(t, db.Pool(t), pid)
		if _, err := tx.Exec(ctx, `SELECT 1`); !data.OutlivedBound(err) {
			t.Errorf("a statement after the idle bound err = %v, want OutlivedBound (the server ended the session)", err)
		}
	})
	t.Run("only this transaction", func(t *testing.T) {
		conn, tx := bounded(t, time.Second)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var idle, stmt string
		if err := conn.QueryRow(ctx, `SELECT current_setting('idle_in_transaction_session_timeout'), current_setting('statement_timeout')`).Scan(&idle, &stmt); err != nil {
			t.Fatal(err)
		}
		if idle != "0" || stmt != "0" {
			t.Errorf("after the transaction: idle %s, statement %s; want both back to 0", idle, stmt)
		}
	})
	t.Run("under a millisecond", func(t *testing.T) {
		tx, err := db.Conn(t).Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := data.BoundTx(ctx, tx, time.Microsecond); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("BoundTx(1µs) err = %v, want ErrInvalid", err)
		}
	})
}
