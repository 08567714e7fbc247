package data

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// SyncQuery says which events a ReadSync returns besides the leases.
type SyncQuery struct {
	// After: return events with id > After. Negative means "the recent
	// tail": id > max(id) - Tail.
	After int64
	// Tail is how far back a negative After reaches, in ids.
	Tail int64
	// Limit caps the events returned; the newest Limit are kept (the
	// oldest with Oldest). Default 10000.
	Limit int
	// Oldest keeps the oldest Limit events instead of the newest: a reader
	// that must see every event pages forward from the last one returned.
	Oldest bool
	// Progress, when set, is called as the read receives the leases (every
	// few hundred) and once it has the events: a caller can tell a read
	// that is long from one that has stalled.
	Progress func()
	// Each, when set, is called with every lease as it arrives, and the
	// Sync returned holds none: a reader that keeps the leases its own way
	// (the monitor's columns) never holds them all as data.Lease. A read
	// that fails may have called it with some.
	Each func(Lease)
}

// Sync is one consistent read of the lease table and the event history: a
// monitor's resync.
type Sync struct {
	Snapshot
	// Events with id > After, oldest first; the newest Limit of them.
	Events []Event
	// After is the id the events start after (resolved when the query
	// asked for the tail).
	After int64
	// Truncated reports that more events matched than Limit: the oldest
	// were left out.
	Truncated bool
}

// ReadSync reads every lease, the server clock and the events q asks for in
// one REPEATABLE READ, READ ONLY transaction, so the events and the leases
// are the same moment of the database: every event the read returns is
// already reflected in the leases, and every later transition commits after
// it (a listener that was LISTENing before ReadSync started receives it).
// It needs only SELECT privileges.
func (s *Store) ReadSync(ctx context.Context, q SyncQuery) (Sync, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 10000
	}
	var out Sync
	err := pgx.BeginTxFunc(ctx, s.Pinned(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			var hint int
			if q.Each == nil {
				hint = leaseEstimate(ctx, tx)
			}
			snap, err := readSnapshotWith(ctx, tx, snapshotRead{sizeHint: hint, progress: q.Progress, each: q.Each},
				allLeases)
			if err != nil {
				return err
			}
			out.Snapshot = snap
			if q.Progress != nil {
				q.Progress()
			}
			after := q.After
			if after < 0 {
				var maxID int64
				if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM lease.event`).Scan(&maxID); err != nil {
					return fmt.Errorf("read events: %w", translate(err))
				}
				after = max(0, maxID-q.Tail)
			}
			out.After = after
			order := "DESC"
			if q.Oldest {
				order = "ASC"
			}
			rows, err := tx.Query(ctx, `SELECT `+eventColumns+` FROM lease.event
				WHERE id > $1 ORDER BY id `+order+` LIMIT $2`, after, limit+1)
			if err != nil {
				return fmt.Errorf("read events: %w", translate(err))
			}
			evs, err := pgx.CollectRows(rows, scanEvent)
			if err != nil {
				return fmt.Errorf("read events: %w", translate(err))
			}
			if len(evs) > limit {
				evs, out.Truncated = evs[:limit], true
			}
			if !q.Oldest {
				slices.Reverse(evs)
			}
			out.Events = evs
			if q.Progress != nil {
				q.Progress()
			}
			return nil
		})
	if err != nil {
		return Sync{}, translate(err) // also Begin's and Commit's
	}
	return out, nil
}

// Lease reads key's lease with the server clock. It reports false when the
// session is not held (no row).
func (s *Store) Lease(ctx context.Context, key Key) (Lease, Clock, bool, error) {
	if err := ValidateKey(key); err != nil {
		return Lease{}, Clock{}, false, err
	}
	var (
		l      Lease
		server time.Time
		att    *string
		pre    bool // preemptible
	)
	t0 := time.Now()
	err := s.Pinned().QueryRow(ctx, `
		SELECT clock_timestamp(), `+leaseColumns+`
		  FROM lease.session_lease l WHERE l.account_id = $1 AND l.session_id = $2`,
		key.Account, key.Session).Scan(&server, &l.Key.Account, &l.Key.Session, &l.RunID, &l.Holder,
		&l.Fence, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt, &pre, &att)
	l.NotPreemptible, l.Attachment = !pre, deref(att)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, Clock{}, false, nil
	}
	if err != nil {
		return Lease{}, Clock{}, false, fmt.Errorf("read lease %s: %w", key, translate(err))
	}
	return l, NewClock(server, t0, time.Now()), true, nil
}
