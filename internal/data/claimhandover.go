package data

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// claimHandedOverQuery reads the fence of key's ($1, $2) row when it names
// run $3 (its own, secret id) by its public id ($5), and only then renews
// the run's lease for $4 as lease.renew does, in one statement: a run the
// row does not name writes nothing (no renew_rejected line for an asker
// whose lease was not handed over yet). The read sees the statement's
// snapshot: a lease that became the run's after it reads NULL, and is
// claimed again.
const claimHandedOverQuery = `
	SELECT CASE WHEN f.fence IS NULL THEN NULL ELSE lease.renew($1, $2, $3, $4) END, f.fence
	  FROM (SELECT (SELECT l.fence FROM lease.session_lease l
	                 WHERE l.account_id = $1 AND l.session_id = $2 AND l.run_id = $5) AS fence
	        OFFSET 0) f`

// ClaimHandedOver claims the lease lease.hand_over moved to runID (the
// asker's own, secret id) in one round trip: it renews the row for ttl, so
// that it runs ttl past the call's arrival, and returns the grant with the
// row's fence, which the caller need not know beforehand (a notification's
// fence is never trusted). A run the row does not name writes nothing;
// otherwise it writes what Renew writes. ErrNotHeld when
// runID holds no unexpired lease on key, or when the fence could not be read
// with the renewal; without SELECT on lease.session_lease (lease_reader) the
// error is ErrPermission.
func (s *Store) ClaimHandedOver(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration) (Grant, error) {
	if err := ValidateKey(key); err != nil {
		return Grant{}, err
	}
	if err := ValidateTTL(ttl); err != nil {
		return Grant{}, err
	}
	var (
		exp   *time.Time
		fence *int64
	)
	err := s.Pinned().QueryRow(ctx, claimHandedOverQuery,
		sqlcall.Secret(s.calls.Mode, key.Account, key.Session, runID, ttl, PublicRunID(runID))...).Scan(&exp, &fence)
	if err != nil {
		return Grant{}, fmt.Errorf("claim %s: %w", key, translate(err))
	}
	if exp == nil || fence == nil {
		return Grant{}, ErrNotHeld
	}
	return Grant{RunID: runID, Fence: *fence, ExpiresAt: *exp}, nil
}
