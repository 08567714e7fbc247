package data

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// HolderCheck is what CheckHolder read of one run's lease.
type HolderCheck struct {
	// Held is true when key's row names the run with the fence asked about.
	// It says nothing of the expiry: the holder's own deadline decides that.
	Held bool
	// Ask is the ask to hand over pending for the run (nil when none, or
	// when not Held).
	Ask *PendingAsk
	// Ending is, when not Held, the event among the key's 8 newest that ended
	// the run's lease: a forced release of it, or a takeover, preempt or
	// hand-over from it. Zero when none of them did.
	Ending Event
}

// checkHolderQuery reads whether key's row ($1, $2) still names the run ($3,
// public) with its fence ($4), and the ask pending for it when it does.
const checkHolderQuery = `
	SELECT h.held, a.asker_run_id, a.asker, a.holder_run_id, a.until_at,
	       greatest(a.until_at - clock_timestamp(), interval '0')
	  FROM (SELECT coalesce((SELECT l.run_id = $3 AND l.fence = $4 FROM lease.session_lease l
	                          WHERE l.account_id = $1 AND l.session_id = $2), false) AS held) h
	  LEFT JOIN lease.handover_ask a
	    ON h.held AND a.account_id = $1 AND a.session_id = $2 AND a.holder_run_id = $3
	   AND a.state = 'pending' AND a.until_at > clock_timestamp()`

// endingEventQuery reads, when the row no longer names the run with its
// fence, the newest of key's 8 newest events that ended the run's lease.
const endingEventQuery = `
	SELECT ` + eventColumns + ` FROM (
	    SELECT * FROM lease.event WHERE account_id = $1 AND session_id = $2 ORDER BY id DESC LIMIT 8) r
	 WHERE ((r.kind = 'force_released' AND r.run_id = $3)
	        OR (r.kind IN ('taken_over', 'preempted', 'handed_over') AND r.prev_run_id = $3))
	   AND NOT EXISTS (SELECT FROM lease.session_lease l
	                    WHERE l.account_id = $1 AND l.session_id = $2 AND l.run_id = $3 AND l.fence = $4)
	 ORDER BY r.id DESC LIMIT 1`

// CheckHolder reads whether run (a public run id) still holds key's lease
// under fence, in one round trip (two statements in one batch) that writes
// nothing: no renewal, so no renew_rejected event for a run that has lost
// the lease. A holder's watch calls it when a notification says the lease
// may have moved. It needs SELECT on lease.session_lease,
// lease.handover_ask and lease.event (lease_reader, and so lease_app);
// without it the error is ErrPermission.
func (s *Store) CheckHolder(ctx context.Context, key Key, run uuid.UUID, fence int64) (HolderCheck, error) {
	if err := ValidateKey(key); err != nil {
		return HolderCheck{}, err
	}
	var (
		c                 HolderCheck
		askRun, askHolder *uuid.UUID
		asker             *string
		askUntil          *time.Time
		askLeft           *time.Duration
	)
	b := keyLookupBatch()
	b.Queue(checkHolderQuery, key.Account, key.Session, run, fence).QueryRow(func(row pgx.Row) error {
		return row.Scan(&c.Held, &askRun, &asker, &askHolder, &askUntil, &askLeft)
	})
	b.Queue(endingEventQuery, key.Account, key.Session, run, fence).Query(func(rows pgx.Rows) error {
		evs, err := pgx.CollectRows(rows, scanEvent)
		if len(evs) > 0 {
			c.Ending = evs[0]
		}
		return err
	})
	if err := s.Pinned().SendBatch(ctx, b).Close(); err != nil {
		return HolderCheck{}, fmt.Errorf("check the holder of %s: %w", key, translate(err))
	}
	if askRun != nil {
		c.Ask = &PendingAsk{RunID: *askRun, Holder: deref(asker), HolderRunID: deref(askHolder),
			Until: deref(askUntil), Remaining: deref(askLeft)}
	}
	return c, nil
}
