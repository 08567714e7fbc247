package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// BoundTx bounds a statement and an idle pause of the transaction on the
// server, only for that transaction, and OutlivedBound recognises both
// ends. A bound under a millisecond is refused.
func TestBoundTx(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	t.Run("statement", func(t *testing.T) {
		conn := db.Conn(t)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := data.BoundTx(ctx, tx, 100*time.Millisecond); err != nil {
			t.Fatalf("BoundTx err = %v", err)
		}
		_, err = tx.Exec(ctx, `SELECT pg_sleep(5)`)
		if !data.OutlivedBound(err) {
			t.Errorf("a statement longer than the bound err = %v, want OutlivedBound", err)
		}
	})
	t.Run("idle", func(t *testing.T) {
		conn := db.Conn(t)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := data.BoundTx(ctx, tx, 100*time.Millisecond); err != nil {
			t.Fatalf("BoundTx err = %v", err)
		}
		var pid int
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pool := db.Pool(t)
		pgtest.Eventually(t, 10*time.Second, "the server to end the idle transaction's session", func() bool {
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n == 0
		})
		if _, err = tx.Exec(ctx, `SELECT 1`); !data.OutlivedBound(err) {
			t.Errorf("a statement after the idle bound err = %v, want OutlivedBound (the server ended the session)", err)
		}
	})
	t.Run("only this transaction", func(t *testing.T) {
		conn := db.Conn(t)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := data.BoundTx(ctx, tx, time.Second); err != nil {
			t.Fatal(err)
		}
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
