package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// Acquire asks for key's lease for runID, for ttl, labelled holder. runID is
// the run's own id, a secret: Renew, Release and CheckFence must be called
// with it, and the lease row and events record PublicRunID(runID) instead. It
// returns the grant (with runID) when runID holds the lease afterwards: a
// fresh grant, a takeover of an expired lease, or runID's own unexpired lease
// unchanged (a retry whose first reply was lost). When another run holds an
// unexpired lease it returns a *HeldError (errors.Is(err, ErrHeld)) naming
// that run by its public id.
//
// lease.acquire refuses a grant whose fence another run overtook in a race
// (SQLSTATE 40001, nothing granted); Acquire retries it, up to 3 times, as
// it retries a refusal whose cause was gone when it read who holds the key
// (the holder's lease, or a slot's, expired in between).
//
// Acquire and Release send the ownership notification themselves, right
// after their commit and in the same round trip, instead of the trigger
// inside it (see call).
func (s *Store) Acquire(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration, holder string) (Grant, error) {
	if err := validateAcquire(key, runID, ttl, holder); err != nil {
		return Grant{}, err
	}
	g, refusal, err := s.grantCall(ctx, sqlcall.AcquireQuiet, key, runID, []any{key.Account, key.Session, runID, ttl, holder}, "")
	if err != nil {
		return Grant{}, fmt.Errorf("acquire %s: %w", key, translate(err))
	}
	return g, refusal
}

// call makes one of the lease functions' calls on a connection of the
// pool, as sqlcall.QuietCall does: the call in its own transaction, opted out
// of the trigger's NOTIFY, and the same notification sent right after the
// commit from a transaction that writes nothing, in one round trip. A role
// that may not send it (no EXECUTE on lease.event_json) leaves the store to
// plain calls from then on, notified by the trigger; the transition whose
// notification was refused is committed, and listeners read it from
// lease.event (ListenerConfig.CatchUp). A notification not sent, for that
// or any other reason, goes to Options.OnNotifyError.
func (s *Store) call(ctx context.Context, q sqlcall.QuietCall, key Key, runID uuid.UUID, args []any, scan func(pgx.Rows) error) error {
	return s.callNotify(ctx, q, args, []any{key.Account, key.Session, PublicRunID(runID)}, scan)
}

// callNotify is call with the notification's parameters given as they are
// (account, session, public run id).
func (s *Store) callNotify(ctx context.Context, q sqlcall.QuietCall, args, notifyArgs []any, scan func(pgx.Rows) error) error {
	o := s.calls
	o.Plain = o.Plain || s.plainCalls.Load()
	o.AfterCommit = s.afterCommit
	return s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		notifyErr, err := q.Run(ctx, c.Conn(), o, args, notifyArgs, scan)
		if notifyErr != nil {
			s.notifyFailed(notifyArgs, translate(notifyErr), err == nil)
		}
		return err
	})
}

// notifyFailed handles a notification that was not sent after its call: a
// role that may not send it leaves the store to plain calls from then on;
// Options.OnNotifyError hears of it when the call committed.
func (s *Store) notifyFailed(notifyArgs []any, err error, committed bool) {
	if errors.Is(err, ErrPermission) {
		s.plainCalls.Store(true)
	}
	if on := s.opt.OnNotifyError; on != nil && committed {
		key := Key{}
		key.Account, _ = notifyArgs[0].(string)
		key.Session, _ = notifyArgs[1].(string)
		on(&NotifyError{Key: key, Err: err})
	}
}

func validateAcquire(key Key, runID uuid.UUID, ttl time.Duration, holder string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if runID == uuid.Nil {
		return &InputError{Field: "run id", Problem: "must not be the nil UUID"}
	}
	if err := ValidateTTL(ttl); err != nil {
		return err
	}
	return ValidateHolder(holder)
}

// held reads who holds key, whether it may be preempted, what it published,
// how many queued tickets are ahead of runID and the pending ask, for the ErrHeld that
// Acquire returns (a refusal only: the grant pays nothing for it). When the
// read fails the refusal stands without its details, and ok is false.
func (s *Store) held(ctx context.Context, key Key, runID uuid.UUID) (e *HeldError, ok bool) {
	e = &HeldError{Key: key}
	var (
		run         *uuid.UUID
		holder      *string
		fence       *int64
		remaining   *time.Duration
		preemptible *bool
		attachment  *string
		askRun      *uuid.UUID
		asker       *string
		askHolder   *uuid.UUID
		askUntil    *time.Time
		askLeft     *time.Duration
	)
	b := keyLookupBatch()
	b.Queue(heldQuery, key.Account, key.Session, PublicRunID(runID)).QueryRow(func(row pgx.Row) error {
		return row.Scan(&run, &holder, &fence, &remaining, &preemptible, &attachment, &e.Queued,
			&askRun, &asker, &askHolder, &askUntil, &askLeft)
	})
	if err := s.Pinned().SendBatch(ctx, b).Close(); err != nil {
		return e, false
	}
	if run != nil {
		e.RunID, e.Holder, e.Fence, e.Remaining, e.Preemptible = *run, *holder, *fence, *remaining, *preemptible
		if attachment != nil {
			e.Attachment = *attachment
		}
	}
	if askRun != nil {
		e.Ask = &PendingAsk{RunID: *askRun, Holder: *asker, HolderRunID: *askHolder, Until: *askUntil, Remaining: *askLeft}
	}
	return e, true
}

// Renew extends runID's unexpired lease to now + ttl on the database clock and
// returns the new expiry. runID is the run's own (secret) id. It returns ErrNotHeld when runID no longer holds an
// unexpired lease; the database then records a renew_rejected event.
func (s *Store) Renew(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration) (time.Time, error) {
	if err := ValidateKey(key); err != nil {
		return time.Time{}, err
	}
	if err := ValidateTTL(ttl); err != nil {
		return time.Time{}, err
	}
	var exp *time.Time
	err := s.pool.QueryRow(ctx, sqlcall.Renew,
		sqlcall.Secret(s.calls.Mode, key.Account, key.Session, runID, ttl)...).Scan(&exp)
	if err != nil {
		return time.Time{}, fmt.Errorf("renew %s: %w", key, translate(err))
	}
	if exp == nil {
		return time.Time{}, ErrNotHeld
	}
	return *exp, nil
}

// Release deletes runID's lease; runID is the run's own (secret) id. It
// reports false, deleting nothing, when runID does not hold the row: the
// normal outcome of a repeated or late release, never an error.
func (s *Store) Release(ctx context.Context, key Key, runID uuid.UUID) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	var ok bool
	err := s.call(ctx, sqlcall.ReleaseQuiet, key, runID, []any{key.Account, key.Session, runID}, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&ok); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return false, fmt.Errorf("release %s: %w", key, translate(err))
	}
	return ok, nil
}

// ForceRelease is the operator's compare-and-release: it deletes key's lease
// only if run still holds it, recording the login role and reason, and
// reports whether a lease was deleted. run is the public run id, as
// Lease.RunID and the events show it, and it is always compared as the
// value it is: uuid.Nil, which no run holds, releases nothing. To release
// whoever holds the lease, say so: ForceReleaseAny.
func (s *Store) ForceRelease(ctx context.Context, key Key, run uuid.UUID, reason string) (bool, error) {
	return s.forceRelease(ctx, key, run, reason)
}

// ForceReleaseAny is the unconditional forced release: it deletes key's
// lease whoever holds it, recording the login role and reason, and reports
// whether a lease was deleted. Prefer ForceRelease with the run that was
// seen: a takeover in between is then left alone.
func (s *Store) ForceReleaseAny(ctx context.Context, key Key, reason string) (bool, error) {
	return s.forceRelease(ctx, key, nil, reason)
}

// forceRelease calls lease.force_release with run: a uuid.UUID, compared, or
// nil (SQL NULL), whoever holds the lease.
func (s *Store) forceRelease(ctx context.Context, key Key, run any, reason string) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	if err := ValidateReason(reason); err != nil {
		return false, err
	}
	ok, err := s.forceReleaseCall(ctx, key, run, reason)
	if err != nil {
		return false, fmt.Errorf("force release %s: %w", key, translate(err))
	}
	return ok, nil
}

// ForceReleaseAccounts force-releases every lease of the given accounts, as
// ForceRelease does one (each compare-and-release on the run holding it when
// the statement reads it), in one statement, recording the login role and
// reason. It returns how many leases it deleted: a demo cleaning up its own
// accounts on a shared database uses it.
func (s *Store) ForceReleaseAccounts(ctx context.Context, accounts []string, reason string) (int, error) {
	if err := ValidateReason(reason); err != nil {
		return 0, err
	}
	var n int
	err := s.Pinned().QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE lease.force_release(account_id, session_id, run_id, $2))
		  FROM lease.session_lease WHERE account_id = ANY($1)`, accounts, reason).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("force release the leases of %d accounts: %w", len(accounts), translate(err))
	}
	return n, nil
}

// CheckFence is the fence check for a write protected by the lease in the same
// database. Call it inside the transaction tx that makes the write: it returns
// nil and locks the lease row FOR SHARE (no takeover can commit until tx ends)
// when runID still holds an unexpired lease with this fence, and ErrNotHeld
// otherwise, in which case the caller must not write. runID is the run's own
// (secret) id; the public id matches nothing and locks nothing.
func CheckFence(ctx context.Context, tx pgx.Tx, key Key, runID uuid.UUID, fence int64) error {
	var ok bool
	err := tx.QueryRow(ctx, sqlcall.CheckFence,
		sqlcall.Secret(tx.Conn().Config().DefaultQueryExecMode, key.Account, key.Session, runID, fence)...).Scan(&ok)
	if err != nil {
		return fmt.Errorf("check fence %s: %w", key, translate(err))
	}
	if !ok {
		return ErrNotHeld
	}
	return nil
}

// SetNotifyRenewals turns per-renewal notifications on or off (off by default:
// a NOTIFY costs every renewal PostgreSQL's commit lock) through q: a store's
// Pool, a connection (migrate sets it on the connection it migrated with) or
// a transaction.
func SetNotifyRenewals(ctx context.Context, q Querier, enabled bool) error {
	_, err := q.Exec(ctx, sqlcall.SetNotifyRenewals, enabled)
	return translate(err)
}

// NotifyRenewals reports whether renewals send notifications.
func (s *Store) NotifyRenewals(ctx context.Context) (bool, error) {
	var on bool
	err := s.pool.QueryRow(ctx, sqlcall.NotifyRenewals).Scan(&on)
	return on, translate(err)
}
