package data

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Locker is a transaction that holds a row locked. A lease's: a fence
// check's FOR SHARE (lease.check_fence), or an update of the row in
// progress; while it is open no takeover of the lease can commit, even after
// the lease expired: for an expired lease it is whom to end
// (pg_terminate_backend). Or the maintenance's (MaintainBusyError).
type Locker struct {
	// PID is the server process running the transaction.
	PID int
	// User is its login role and App its application_name (untrusted
	// text); every role sees them.
	User, App string
	// State is pg_stat_activity's state, such as "idle in transaction"
	// (waiting for its client: a paused or stuck writer) or "active". Empty
	// when this role may not see it.
	State string
	// InTx is how long the transaction has been open and InState how long
	// it has been in State; zero when this role may not see them.
	InTx, InState time.Duration
	// Visible reports whether this role may see the session's state and
	// times in pg_stat_activity: a member of its login role or of
	// pg_read_all_stats, or a superuser. Without them PID, User and App are
	// still known, which is enough to find and end it.
	Visible bool
}

// Lockers returns the transactions holding key's lease row locked, found
// through the row's xmax (the locking transaction's id) in pg_locks, which
// every role may read, with what pg_stat_activity shows of them. A role that
// is not a member of the locker's login role or of pg_read_all_stats (the
// monitor's lease_reader, typically) sees the pid, user and application,
// not the state or the times. A row locked by several transactions at once (its xmax is then a
// multixact) yields none. No lease row, or an unlocked one, yields none.
func (s *Store) Lockers(ctx context.Context, key Key) ([]Locker, error) {
	rows, err := s.Pinned().Query(ctx, `
		SELECT x.pid, coalesce(a.usename, ''), coalesce(a.application_name, ''), coalesce(a.state, ''),
		       clock_timestamp() - a.xact_start, clock_timestamp() - a.state_change, a.state IS NOT NULL
		  FROM lease.session_lease l
		  JOIN pg_locks x ON x.locktype = 'transactionid' AND x.transactionid = l.xmax
		                 AND x.mode = 'ExclusiveLock' AND x.granted
		  JOIN pg_locks r ON r.pid = x.pid AND r.locktype = 'relation' AND r.granted
		                 AND r.relation = 'lease.session_lease'::regclass
		                 AND r.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  LEFT JOIN pg_stat_activity a ON a.pid = x.pid
		 WHERE l.account_id = $1 AND l.session_id = $2
		 ORDER BY a.xact_start NULLS LAST, x.pid`, key.Account, key.Session)
	if err != nil {
		return nil, fmt.Errorf("lockers of %s: %w", key, translate(err))
	}
	lockers, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Locker, error) {
		var lk Locker
		var inTx, inState *time.Duration
		err := row.Scan(&lk.PID, &lk.User, &lk.App, &lk.State, &inTx, &inState, &lk.Visible)
		if inTx != nil {
			lk.InTx = *inTx
		}
		if inState != nil {
			lk.InState = *inState
		}
		return lk, err
	})
	if err != nil {
		return nil, fmt.Errorf("lockers of %s: %w", key, translate(err))
	}
	return lockers, nil
}
