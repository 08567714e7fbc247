package data

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// ClearTicket is the operator's end of one ticket (lease.clear_queue, role
// lease_admin): it ends the live ticket of the run whose *public* id is run
// (as QueueOf shows it) in key's queue, records a queue_left event with
// reason "cleared: " + reason and the login as actor, and reports whether
// there was such a ticket. The cleared run's next enqueue or renewal is
// refused with ErrTicketCleared, so it stops waiting instead of joining
// again at the tail.
func (s *Store) ClearTicket(ctx context.Context, key Key, run uuid.UUID, reason string) (bool, error) {
	n, err := s.clearQueue(ctx, key, run, reason)
	return n > 0, err
}

// ClearQueue is ClearTicket for every live ticket of key's queue; it
// returns how many it ended.
func (s *Store) ClearQueue(ctx context.Context, key Key, reason string) (int, error) {
	return s.clearQueue(ctx, key, nil, reason)
}

// clearQueue calls lease.clear_queue with run, the public run id (SQL NULL:
// every ticket).
func (s *Store) clearQueue(ctx context.Context, key Key, run any, reason string) (int, error) {
	if err := ValidateKey(key); err != nil {
		return 0, err
	}
	if err := ValidateReason(reason); err != nil {
		return 0, err
	}
	var n int32
	if err := s.pool.QueryRow(ctx, sqlcall.ClearQueue, key.Account, key.Session, run, reason).Scan(&n); err != nil {
		return 0, fmt.Errorf("clear queue %s: %w", key, translate(err))
	}
	return int(n), nil
}
