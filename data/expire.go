package data

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The two functions below write or lock the lease table directly, outside
// the protocol's functions, for tests (package lease/leasetest): they need
// UPDATE on lease.session_lease, which only its owner has.

// ExpireNow ends key's lease on the database clock now, whoever holds it:
// its expires_at becomes clock_timestamp(), as if its TTL had just run out.
// No event is recorded (an expiry never is). It reports whether there was a
// lease to expire.
func ExpireNow(ctx context.Context, q Querier, key Key) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE lease.session_lease SET expires_at = least(expires_at, clock_timestamp())
		WHERE account_id = $1 AND session_id = $2`, key.Account, key.Session)
	if err != nil {
		return false, fmt.Errorf("expire %s: %w", key, translate(err))
	}
	return tag.RowsAffected() == 1, nil
}

// LockRow locks key's lease row FOR UPDATE in tx until tx ends: renewals,
// fence checks, releases and takeovers of it wait meanwhile (each up to the
// protocol's lock_timeout of 5 s, then fails). It reports whether there was
// a row to lock.
func LockRow(ctx context.Context, tx pgx.Tx, key Key) (bool, error) {
	tag, err := tx.Exec(ctx, `SELECT FROM lease.session_lease WHERE account_id = $1 AND session_id = $2 FOR UPDATE`,
		key.Account, key.Session)
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", key, translate(err))
	}
	return tag.RowsAffected() == 1, nil
}
