package data

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
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
	ms, err := boundMillis(d)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, boundSQL, ms); err != nil {
		return fmt.Errorf("bound transaction: %w", translate(err))
	}
	return nil
}

// boundSQL sets both bounds, for this transaction only, to $1 milliseconds.
const boundSQL = `SELECT pg_catalog.set_config('statement_timeout', $1, true),
	pg_catalog.set_config('idle_in_transaction_session_timeout', $1, true)`

// checkFenceSQL is lease.check_fence's call, for database/sql (CheckFence
// has it too).
const checkFenceSQL = `SELECT lease.check_fence($1, $2, $3, $4)`

// boundMillis is d as the settings' text: whole milliseconds, at least one.
func boundMillis(d time.Duration) (string, error) {
	ms := d.Milliseconds()
	if ms < 1 {
		return "", &InputError{Field: "transaction bound", Problem: "must be at least 1ms"}
	}
	return strconv.FormatInt(ms, 10), nil
}
