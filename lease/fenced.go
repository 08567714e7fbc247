package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// Beginner starts a transaction: a *pgxpool.Pool, a *pgx.Conn, or a pgx.Tx
// (which starts a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// errOutlived is the cause of ErrStale when a fenced transaction ran past
// the lease's safe deadline as it was when the transaction began.
var errOutlived = errors.New("the fenced transaction outlived the lease's safe deadline")

// FencedTx runs fn in a transaction on db, the lease's database, that only
// this run can commit in while it holds the lease: the protected write.
// Put only the write in fn (and what it must read first): a transaction
// that holds the fence blocks every takeover of the session until it ends.
//
// FencedTx begins the transaction, bounds it on the server by the lease's
// remaining safe time (the local deadline, minus now: data.BoundTx sets
// statement_timeout and idle_in_transaction_session_timeout for the
// transaction), runs the fence check (Token.Check: the lease row locked FOR
// SHARE, so no takeover can commit until the transaction ends), calls fn,
// and commits. fn's context ends at the same deadline, when the lease is
// lost, or when ctx ends. So a holder that is frozen inside the transaction
// (GC, SIGSTOP, a paused VM) keeps the row locked for that bound at most:
// the server then ends its session, and the next run takes over once the
// lease expires, instead of waiting for the frozen process forever.
//
// It returns ErrStale, with the cause on the same line, when this run may
// not write: the lease was lost or released before or during the
// transaction (errors.Is(err, ErrLost) and its reason, or ErrReleased), the
// fence check failed, or the transaction outlived its bound. That holds
// however the end reached the transaction: a statement cut off by the
// loss (also when ctx is the lease's own context, or Do's, which the loss
// cancels too), the server ending a frozen holder's session (directly or
// through a pooler), or a holder that resumes after its deadline between fn
// and the commit, which then commits nothing. The transaction is then
// rolled back: nothing was written. Otherwise it returns fn's error (after
// rolling back), ctx's error when ctx ended while the lease held, a
// database error, or, when the commit fails, that error (a commit whose
// reply was lost may still have committed, under the fence).
//
// FencedSQLTx is the same for database/sql.
func (l *Lease) FencedTx(ctx context.Context, db Beginner, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return l.fenced(ctx, func(ctx context.Context) (fencedTx, error) {
		tx, err := db.Begin(ctx)
		return pgxFenced{tx: tx, token: l.token, fn: fn}, err
	})
}

// fencedTx is one open fenced transaction, whatever its driver.
type fencedTx interface {
	bound(ctx context.Context, d time.Duration) error
	check(ctx context.Context) error
	work(ctx context.Context) error
	commit(ctx context.Context) error
	// rolledBack reports whether commit's error means nothing was
	// committed.
	rolledBack(err error) bool
	rollback(ctx context.Context)
}

// fenced runs the fenced transaction that begin starts (see FencedTx).
func (l *Lease) fenced(ctx context.Context, begin func(ctx context.Context) (fencedTx, error)) error {
	if err := l.Err(); err != nil {
		return l.stale(err)
	}
	deadline := l.State().Deadline
	bound := time.Until(deadline)
	if bound < time.Millisecond {
		return l.stale(errOutlived)
	}
	fctx, cancel := context.WithDeadlineCause(ctx, deadline, errOutlived)
	defer cancel()
	lctx, cancelLost := context.WithCancelCause(fctx)
	defer cancelLost(nil)
	stop := context.AfterFunc(l.ctx, func() { cancelLost(context.Cause(l.ctx)) })
	defer stop()

	tx, err := begin(lctx)
	if err != nil {
		return l.txError(ctx, lctx, deadline, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.ReleaseTimeout)
		defer cancel()
		tx.rollback(rctx) // after a commit: a no-op
	}()
	for _, step := range []func(context.Context) error{
		func(ctx context.Context) error { return tx.bound(ctx, bound) },
		tx.check,
		tx.work,
	} {
		if err := step(lctx); err != nil {
			return l.txError(ctx, lctx, deadline, err)
		}
	}
	// A holder frozen after fn returned resumes here: it commits nothing
	// once the lease has ended or its deadline has passed, even if no
	// timer has said so yet.
	if err := l.ended(deadline); err != nil {
		return l.stale(err)
	}
	if err := tx.commit(lctx); err != nil {
		if tx.rolledBack(err) {
			if stale := l.txError(ctx, lctx, deadline, err); errors.Is(stale, ErrStale) {
				return stale
			}
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ended returns why the run may no longer write: the lease's end, or
// errOutlived once the local deadline, as it was when the fenced
// transaction began, has passed; nil while the lease holds.
func (l *Lease) ended(deadline time.Time) error {
	if err := l.Err(); err != nil {
		return err
	}
	if !time.Now().Before(deadline) {
		return errOutlived
	}
	return nil
}

// txError says why a fenced transaction failed before its commit (or why
// a commit that committed nothing failed): ErrStale with its cause when the
// lease ended it, else err unchanged (a failed fence check's err is ErrStale
// already). The lease ended it when the lease has ended (lost or released)
// or its deadline has passed, whatever err says: a statement cut off by the
// loss fails with a context error, a frozen holder whose session the
// server ended with a connection or pooler error. It ended it too when lctx
// (the transaction's context, whose parent is ctx) ended while ctx did not,
// or when the server cut the transaction at its bound. ctx's own error is
// returned only when ctx ended while the lease held: the caller gave up.
func (l *Lease) txError(ctx, lctx context.Context, deadline time.Time, err error) error {
	if end := l.ended(deadline); end != nil {
		return l.stale(end)
	}
	switch {
	case lctx.Err() != nil && ctx.Err() == nil:
		return l.stale(context.Cause(lctx))
	case data.OutlivedBound(err):
		return l.stale(errOutlived)
	}
	return err
}

// stale is ErrStale because of cause, or because of the lease's own end
// when it has ended (that says more than a deadline).
func (l *Lease) stale(cause error) error {
	l.onDeadline() // a deadline that passed has ended the lease, even if the watchdog has not run yet
	if end := l.Err(); end != nil {
		cause = end
	}
	return fmt.Errorf("%w: %w", ErrStale, cause)
}

// pgxFenced is a fenced transaction on pgx.
type pgxFenced struct {
	tx    pgx.Tx
	token Token
	fn    func(ctx context.Context, tx pgx.Tx) error
}

func (f pgxFenced) bound(ctx context.Context, d time.Duration) error {
	return data.BoundTx(ctx, f.tx, d)
}
func (f pgxFenced) check(ctx context.Context) error  { return f.token.Check(ctx, f.tx) }
func (f pgxFenced) work(ctx context.Context) error   { return f.fn(ctx, f.tx) }
func (f pgxFenced) commit(ctx context.Context) error { return f.tx.Commit(ctx) }
func (f pgxFenced) rollback(ctx context.Context)     { _ = f.tx.Rollback(ctx) }

// rolledBack reports whether a failed commit certainly committed nothing
// (data.NotApplied): it was never sent (the context was done first, say), or
// the server answered it with an error. A commit cut off in flight may have
// committed.
func (f pgxFenced) rolledBack(err error) bool {
	return data.NotApplied(err) || errors.Is(err, pgx.ErrTxCommitRollback)
}
