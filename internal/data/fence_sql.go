package data

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// CheckFenceSQL is CheckFence for a database/sql transaction (pgx's stdlib
// driver, lib/pq, ...): inside tx, before the protected write, it returns
// nil and locks the lease row FOR SHARE until tx ends when runID still
// holds an unexpired lease with this fence, else ErrNotHeld.
func CheckFenceSQL(ctx context.Context, tx *sql.Tx, key Key, runID uuid.UUID, fence int64) error {
	var ok bool
	err := tx.QueryRowContext(ctx, checkFenceSQL, key.Account, key.Session, runID, fence).Scan(&ok)
	if err != nil {
		return fmt.Errorf("check fence %s: %w", key, translate(err))
	}
	if !ok {
		return ErrNotHeld
	}
	return nil
}

// BoundSQLTx is BoundTx for a database/sql transaction.
func BoundSQLTx(ctx context.Context, tx *sql.Tx, d time.Duration) error {
	ms, err := boundMillis(d)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, boundSQL, ms); err != nil {
		return fmt.Errorf("bound transaction: %w", translate(err))
	}
	return nil
}
