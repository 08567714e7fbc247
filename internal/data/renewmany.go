package data

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// MaxRenewMany is the most renewals one RenewMany call (one lease.renew_many
// call) takes.
const MaxRenewMany = 10000

// RenewItem is one renewal for RenewMany: a key and the run's own (secret) id.
type RenewItem struct {
	Key   Key
	RunID uuid.UUID
}

// Renewal is RenewMany's outcome for one item: the new expiry on the
// database clock, or Err: ErrNotHeld (the run no longer holds an unexpired
// lease, as Renew reports it) or ErrLocked (another transaction holds the
// row; nothing was decided, renew it alone).
type Renewal struct {
	ExpiresAt time.Time
	Err       error
}

// RenewMany renews every item's lease to now + ttl on the database clock in
// one statement, one transaction and one round trip (lease.renew_many), and
// returns one Renewal per item, in items' order. Each item is decided as
// Renew decides it: only the run's own unexpired row is renewed, a rejected
// one is ErrNotHeld alone (the database records a renew_rejected event when
// the run held the key, once per grant it meets there and at most 100 a
// call: the result, not the history, says every rejection), and the others
// are renewed all the same. A row
// another transaction has locked is skipped, not waited for (ErrLocked), so
// one busy lease does not hold back the rest. The error is for the call as a
// whole (bad input, the database unreachable): then nothing is known of any
// item.
func (s *Store) RenewMany(ctx context.Context, ttl time.Duration, items []RenewItem) ([]Renewal, error) {
	if len(items) > MaxRenewMany {
		return nil, &InputError{Field: "renewals", Problem: fmt.Sprintf("must be at most %d per call, got %d", MaxRenewMany, len(items))}
	}
	if err := ValidateTTL(ttl); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	accounts := make([]string, len(items))
	sessions := make([]string, len(items))
	runs := make([]uuid.UUID, len(items))
	for k, it := range items {
		if err := ValidateKey(it.Key); err != nil {
			return nil, err
		}
		accounts[k], sessions[k], runs[k] = it.Key.Account, it.Key.Session, it.RunID
	}
	out := make([]Renewal, len(items))
	for k := range out {
		out[k].Err = ErrLocked // until the result says otherwise
	}
	rows, err := s.pool.Query(ctx, sqlcall.RenewMany, sqlcall.Secret(s.calls.Mode, accounts, sessions, runs, ttl)...)
	if err != nil {
		return nil, fmt.Errorf("renew %d leases: %w", len(items), translate(err))
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i   int
			exp *time.Time
		)
		if err := rows.Scan(&i, &exp); err != nil {
			return nil, fmt.Errorf("renew %d leases: %w", len(items), translate(err))
		}
		if i < 1 || i > len(items) {
			return nil, fmt.Errorf("renew %d leases: the database answered for renewal %d", len(items), i)
		}
		if exp == nil {
			out[i-1] = Renewal{Err: ErrNotHeld}
		} else {
			out[i-1] = Renewal{ExpiresAt: *exp}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("renew %d leases: %w", len(items), translate(err))
	}
	return out, nil
}
