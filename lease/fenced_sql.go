package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// SQLBeginner starts a database/sql transaction: a *sql.DB or a *sql.Conn.
type SQLBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// FencedSQLTx is FencedTx for database/sql (with pgx's stdlib driver,
// lib/pq, ...): fn's write commits only while this run holds the lease, in
// a transaction the server bounds by the lease's remaining safe time; it
// returns ErrStale with the cause when the run may not write.
func (l *Lease) FencedSQLTx(ctx context.Context, db SQLBeginner, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return l.fenced(ctx, func(ctx context.Context) (fencedTx, error) {
		tx, err := db.BeginTx(ctx, nil)
		return sqlFenced{tx: tx, token: l.token, fn: fn}, err
	})
}

// CheckSQL is Check for a database/sql transaction: call it inside the
// transaction tx that makes the protected write, before the write. It
// returns nil and locks the lease row FOR SHARE until tx ends when t's run
// still holds an unexpired lease with t's fence, else ErrStale (do not
// write) or the database's error.
func (t Token) CheckSQL(ctx context.Context, tx *sql.Tx) error {
	err := data.CheckFenceSQL(ctx, tx, t.Key, t.RunID, t.Fence)
	if errors.Is(err, data.ErrNotHeld) {
		return fmt.Errorf("%w: fence %d no longer holds %q", ErrStale, t.Fence, t.Key.String())
	}
	return err
}

// sqlFenced is a fenced transaction on database/sql.
type sqlFenced struct {
	tx    *sql.Tx
	token Token
	fn    func(ctx context.Context, tx *sql.Tx) error
}

func (f sqlFenced) bound(ctx context.Context, d time.Duration) error {
	return data.BoundSQLTx(ctx, f.tx, d)
}
func (f sqlFenced) check(ctx context.Context) error { return f.token.CheckSQL(ctx, f.tx) }
func (f sqlFenced) work(ctx context.Context) error  { return f.fn(ctx, f.tx) }
func (f sqlFenced) commit(context.Context) error    { return f.tx.Commit() }
func (f sqlFenced) rollback(context.Context)        { _ = f.tx.Rollback() }

// rolledBack reports whether a failed commit certainly committed nothing:
// database/sql refused it (the transaction was done, or its context ended
// and database/sql rolled it back), or the server answered it with an
// error. A commit cut off in flight may have committed.
func (f sqlFenced) rolledBack(err error) bool {
	return errors.Is(err, sql.ErrTxDone) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		data.NotApplied(err)
}
