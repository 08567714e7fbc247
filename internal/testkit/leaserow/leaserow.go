// Package leaserow writes and locks rows of lease.session_lease directly,
// outside the protocol's functions, to make a lease run out or stall on
// purpose in a test: lease/leasetest's ExpireNow and BlockRenewals, and the
// data and lease test suites. It needs UPDATE and DELETE on the table,
// which only the schema's owner has, so no program's role can call it; it
// is internal because it is no part of the protocol a program may use.
package leaserow

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// ExpireNow ends key's lease on the database clock now, whoever holds it:
// its expires_at becomes clock_timestamp(), as if its TTL had just run out.
// No event is recorded (an expiry never is). It reports whether there was a
// lease to expire.
func ExpireNow(ctx context.Context, q data.Querier, key data.Key) (bool, error) {
	_, ok, err := Expire(ctx, q, key)
	return ok, err
}

// Expire is ExpireNow that also says which run it expired: the lease's
// public run id and fence, for DeleteExpired.
func Expire(ctx context.Context, q data.Querier, key data.Key) (Expired, bool, error) {
	var e Expired
	err := q.QueryRow(ctx, `UPDATE lease.session_lease SET expires_at = least(expires_at, clock_timestamp())
		WHERE account_id = $1 AND session_id = $2 RETURNING run_id, fence`, key.Account, key.Session).Scan(&e.RunID, &e.Fence)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Expired{}, false, nil
	case err != nil:
		return Expired{}, false, fmt.Errorf("expire %s: %w", key, data.Translate(err))
	}
	e.Key = key
	return e, true, nil
}

// Expired names a lease Expire expired.
type Expired struct {
	data.Key
	RunID uuid.UUID // public run id
	Fence int64
}

// DeleteExpired removes the lease e if it is still there and expired: the
// same run and fence (nobody took it over, released it or acquired it
// again) and its expires_at passed. The trigger records a released event.
// It reports whether it removed the row.
func DeleteExpired(ctx context.Context, q data.Querier, e Expired) (bool, error) {
	tag, err := q.Exec(ctx, `DELETE FROM lease.session_lease
		WHERE account_id = $1 AND session_id = $2 AND run_id = $3 AND fence = $4 AND expires_at <= clock_timestamp()`,
		e.Account, e.Session, e.RunID, e.Fence)
	if err != nil {
		return false, fmt.Errorf("delete expired %s: %w", e.Key, data.Translate(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Lock locks key's lease row FOR UPDATE in tx until tx ends: renewals,
// fence checks, releases and takeovers of it wait meanwhile (each up to the
// protocol's lock_timeout of 5 s, then fails). It reports whether there was
// a row to lock.
func Lock(ctx context.Context, tx pgx.Tx, key data.Key) (bool, error) {
	tag, err := tx.Exec(ctx, `SELECT FROM lease.session_lease WHERE account_id = $1 AND session_id = $2 FOR UPDATE`,
		key.Account, key.Session)
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", key, data.Translate(err))
	}
	return tag.RowsAffected() == 1, nil
}
