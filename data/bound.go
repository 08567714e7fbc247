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
	ms := d.Milliseconds()
	if ms < 1 {
		return &InputError{Field: "transaction bound", Problem: "must be at least 1ms"}
	}
	_, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true),
		set_config('idle_in_transaction_session_timeout', $1, true)`, strconv.FormatInt(ms, 10))
	if err != nil {
		return fmt.Errorf("bound transaction: %w", translate(err))
	}
	return nil
}

// OutlivedBound reports whether err is the server ending what BoundTx
// bounded: a statement cancelled by statement_timeout (SQLSTATE 57014, also
// raised by pg_cancel_backend) or a session ended by
// idle_in_transaction_session_timeout (25P03).
func OutlivedBound(err error) bool {
	switch sqlstate(err) {
	case "57014", "25P03":
		return true
	}
	return false
}
