package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaintainBusyError is MaintainEvents finding another maintenance running:
// lease.maintain_events runs one at a time, holding the row of
// lease.maintenance, which only the lease objects' owner may lock (an
// advisory lock, which any role that may connect can take and keep, could
// stop the maintenance for good). It does not wait: the one running makes
// the same partitions.
type MaintainBusyError struct {
	// Holder is the session running it, as every role may see it (its
	// state and times only where pg_stat_activity shows them); its PID is
	// 0 when it ended before it could be named.
	Holder Locker
}

func (e *MaintainBusyError) Error() string {
	h := e.Holder
	if h.PID == 0 {
		return "maintain: another maintenance was running and has just ended: run maintain again"
	}
	state := "its state hidden from this role"
	if h.Visible {
		open := h.InTx.Round(time.Second)
		if open == 0 {
			open = h.InTx.Round(time.Millisecond)
		}
		state = fmt.Sprintf("%s, transaction open for %s", h.State, open)
	}
	return fmt.Sprintf("maintain: another maintenance is running, in pid %d (role %s, application %q, %s): run maintain again once it has ended, or end it (SELECT pg_terminate_backend(%d))",
		h.PID, h.User, h.App, state, h.PID)
}

// maintenanceHolder names the session holding lease.maintenance's row: the
// one whose transaction holds a lock on that table (only maintain_events
// takes one, as the owner), longest open first. Every name is qualified, as
// the library's search_path is the caller's.
const maintenanceHolder = `
SELECT l.pid, coalesce(a.usename::pg_catalog.text, ''), coalesce(a.application_name, ''), coalesce(a.state, ''),
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) a.xact_start, a.state IS NOT NULL
  FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
 WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.granted
   AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
   AND l.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                                           WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
   AND l.relation OPERATOR(pg_catalog.=) 'lease.maintenance'::pg_catalog.regclass
 ORDER BY a.xact_start NULLS LAST, l.pid
 LIMIT 1`

// maintainBusy builds the error for a maintenance that found another
// running (isMaintenanceBusy).
func (s *Store) maintainBusy(ctx context.Context) error {
	e := &MaintainBusyError{}
	var inTx *time.Duration
	err := s.pool.QueryRow(ctx, maintenanceHolder).Scan(&e.Holder.PID, &e.Holder.User, &e.Holder.App, &e.Holder.State, &inTx, &e.Holder.Visible)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("maintain: another maintenance is running (who, could not be read: %w)", translate(err))
	case inTx != nil:
		e.Holder.InTx = *inTx
	}
	return e
}
