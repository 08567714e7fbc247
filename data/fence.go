package data

import (
	"context"
	"database/sql"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	impl "github.com/leasetop/leasetop/internal/data"
)

// BoundTx limits what is left of tx on the server to d, with SET LOCAL (so
// only until tx ends): each statement may run for d at most
// (statement_timeout), and tx may sit idle between statements for d at most
// (idle_in_transaction_session_timeout; the server then ends the session,
// and the transaction with it). A process frozen inside tx therefore holds
// tx's locks, such as the lease row a fence check locked FOR SHARE, for
// about d at most. d is rounded down to whole milliseconds; it must be at
// least one.
//
// Given a savepoint, the settings stay on the enclosing transaction until it
// ends (unless the savepoint is rolled back).
func BoundTx(ctx context.Context, tx pgx.Tx, d time.Duration) error {
	return impl.BoundTx(ctx, tx, d)
}

// BoundSQLTx is BoundTx for a database/sql transaction.
func BoundSQLTx(ctx context.Context, tx *sql.Tx, d time.Duration) error {
	return impl.BoundSQLTx(ctx, tx, d)
}

// CheckFence is the fence check for a write protected by the lease in the same
// database. Call it inside the transaction tx that makes the write: it returns
// nil and locks the lease row FOR SHARE (no takeover can commit until tx ends)
// when runID still holds an unexpired lease with this fence, and ErrNotHeld
// otherwise, in which case the caller must not write. runID is the run's own
// (secret) id; the public id matches nothing and locks nothing.
func CheckFence(ctx context.Context, tx pgx.Tx, key Key, runID uuid.UUID, fence int64) error {
	return impl.CheckFence(ctx, tx, key, runID, fence)
}

// CheckFenceSQL is CheckFence for a database/sql transaction (pgx's stdlib
// driver, lib/pq, ...): inside tx, before the protected write, it returns
// nil and locks the lease row FOR SHARE until tx ends when runID still
// holds an unexpired lease with this fence, else ErrNotHeld.
func CheckFenceSQL(ctx context.Context, tx *sql.Tx, key Key, runID uuid.UUID, fence int64) error {
	return impl.CheckFenceSQL(ctx, tx, key, runID, fence)
}

// OutlivedBound reports whether err is the server ending what BoundTx
// bounded: a statement cancelled by statement_timeout (SQLSTATE 57014, also
// raised by pg_cancel_backend) or a session ended by
// idle_in_transaction_session_timeout (25P03).
func OutlivedBound(err error) bool {
	return impl.OutlivedBound(err)
}
