package data

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Snapshot is every live lease with the server clock sampled in the same
// query.
type Snapshot struct {
	Leases []Lease
	Clock  Clock
	// Recovery is the server's replication state, read in the same query.
	Recovery Recovery
}

const leaseColumns = `l.account_id, l.session_id, l.run_id, l.holder, l.fence, l.acquired_at, l.renewed_at, l.expires_at,
	l.preemptible, l.attachment`

// Snapshot reads all leases. The server clock is sampled once, at the start of
// the query, and its uncertainty is half the time to the first row.
func (s *Store) Snapshot(ctx context.Context) (Snapshot, error) {
	return readSnapshot(ctx, s.Pinned(), allLeases)
}

// Changed reads the leases renewed, acquired or taken over after since (on the
// database clock), with the server clock: the monitor's cheap periodic delta
// read, which sees renewals without any NOTIFY.
func (s *Store) Changed(ctx context.Context, since time.Time) (Snapshot, error) {
	return readSnapshot(ctx, s.Pinned(), `
		SELECT `+serverColumns+`, `+leaseColumns+`
		  FROM `+serverNow+` n
		  LEFT JOIN lease.session_lease l ON l.renewed_at > $1`, since)
}

// allLeases reads every lease with the server clock.
const allLeases = `
	SELECT ` + serverColumns + `, ` + leaseColumns + `
	  FROM ` + serverNow + ` n
	  LEFT JOIN lease.session_lease l ON true`

// readSnapshot runs a lease query whose first columns are serverColumns (the
// clock sampled once) and whose lease columns are NULL in the one row a LEFT
// JOIN returns when no lease matches. The clock's uncertainty is half the
// time to the first row.
func readSnapshot(ctx context.Context, q Querier, query string, args ...any) (Snapshot, error) {
	return readSnapshotWith(ctx, q, snapshotRead{}, query, args...)
}

// snapshotRead is how readSnapshotWith reads a large snapshot.
type snapshotRead struct {
	sizeHint int         // the leases expected: room for them is made at once
	progress func()      // called every progressRows rows received; may be nil
	each     func(Lease) // when set, called with every lease instead of keeping them
}

// progressRows is how many rows a read receives between progress calls:
// a few tens of kilobytes, so that a slow link still reports progress often.
const progressRows = 256

// readSnapshotWith is readSnapshot with a size hint and a progress call.
func readSnapshotWith(ctx context.Context, q Querier, how snapshotRead, query string, args ...any) (Snapshot, error) {
	var snap Snapshot
	if how.progress == nil {
		how.progress = readProgress(ctx)
	}
	t0 := time.Now()
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return snap, fmt.Errorf("read leases: %w", translate(err))
	}
	defer rows.Close()
	keep := func(l Lease) { snap.Leases = append(snap.Leases, l) }
	if how.each != nil {
		keep = how.each
	} else if how.sizeHint > 0 {
		snap.Leases = make([]Lease, 0, how.sizeHint)
	}
	raw := newRawLeases(rows.FieldDescriptions())
	first := true
	for n := 1; rows.Next(); n++ {
		if how.progress != nil && n%progressRows == 0 {
			how.progress()
		}
		var l Lease
		if !first && raw.decode(rows.RawValues(), &l) {
			keep(l)
			continue
		}
		l, ok, err := scanSnapshotRow(rows, &snap, first, t0)
		if err != nil {
			return snap, fmt.Errorf("read leases: %w", translate(err))
		}
		first = false
		if ok {
			keep(l)
		}
	}
	if err := rows.Err(); err != nil {
		return snap, fmt.Errorf("read leases: %w", translate(err))
	}
	return snap, nil
}

// scanSnapshotRow scans a snapshot row with rows.Scan: the first (which
// carries the clock) and any rawLeases does not decode. It reports false
// for the LEFT JOIN's row when there are no leases.
func scanSnapshotRow(rows pgx.Rows, snap *Snapshot, first bool, t0 time.Time) (Lease, bool, error) {
	var (
		server time.Time
		rec    recoveryColumns
		l      Lease
		run    *uuid.UUID
		acct   *string
		sess   *string
		holder *string
		fence  *int64
		acq    *time.Time
		ren    *time.Time
		exp    *time.Time
		pre    *bool // preemptible
		att    *string
	)
	if err := rows.Scan(&server, &rec.standby, &rec.replay, &acct, &sess, &run, &holder, &fence, &acq, &ren, &exp, &pre, &att); err != nil {
		return l, false, err
	}
	if first {
		snap.Clock = NewClock(server, t0, time.Now())
		snap.Recovery = rec.recovery()
	}
	if acct == nil {
		return l, false, nil // the LEFT JOIN's row when there are no leases
	}
	l.Key = Key{Account: *acct, Session: *sess}
	l.RunID, l.Holder, l.Fence = *run, *holder, *fence
	l.AcquiredAt, l.RenewedAt, l.ExpiresAt = *acq, *ren, *exp
	l.NotPreemptible, l.Attachment = pre != nil && !*pre, deref(att)
	return l, true, nil
}

const eventColumns = `id, at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence,
	expires_at, prev_expires_at, holder, actor, reason, prev_holder, message_id`

// eventsSinceSQL and eventsForSQL are EventsSince's and EventsFor's reads:
// by id (catch-up, `events --since`) and by session (the detail view).
const (
	eventsSinceSQL = `SELECT ` + eventColumns + ` FROM lease.event WHERE id > $1 ORDER BY id LIMIT $2`
	eventsForSQL   = `SELECT ` + eventColumns + ` FROM lease.event
		WHERE account_id = $1 AND session_id = $2 ORDER BY id DESC LIMIT $3`
)

// EventsSince returns up to limit events with id > after, oldest first: one
// page of the history (Events reads all of it).
func (s *Store) EventsSince(ctx context.Context, after int64, limit int) ([]Event, error) {
	return s.events(ctx, eventsSinceSQL, after, limit)
}

// eventsPage is how many events Events reads at a time.
const eventsPage = 1000

// Events iterates over the event history after the id after, oldest first,
// reading it a page at a time as the loop asks for more, until it has
// yielded the newest event committed when it read the last page. Breaking out
// of the loop stops the reading. A failed read ends the iteration: it is
// yielded with a zero Event.
//
// Ids are drawn before commit, so an event can commit after a later id was
// read; a reader that must not miss it re-reads a window below its last id
// (as monitor.Feed does).
func (s *Store) Events(ctx context.Context, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		from := after
		for {
			page, err := s.EventsSince(ctx, from, eventsPage)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range page {
				if !yield(ev, nil) {
					return
				}
			}
			if len(page) < eventsPage {
				return
			}
			from = page[len(page)-1].ID
		}
	}
}

// EventsFor returns up to limit of key's most recent events, newest first.
func (s *Store) EventsFor(ctx context.Context, key Key, limit int) ([]Event, error) {
	return s.events(ctx, eventsForSQL, key.Account, key.Session, limit)
}

// LastEventID returns the highest event id, 0 when there are none.
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	err := s.Pinned().QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM lease.event`).Scan(&id)
	return id, translate(err)
}

// events reads the event rows query returns through Pinned.
func (s *Store) events(ctx context.Context, query string, args ...any) ([]Event, error) {
	return readEvents(ctx, s.Pinned(), query, args...)
}

// readEvents reads the event rows query returns through q, calling ctx's
// WithReadProgress function as they arrive.
func readEvents(ctx context.Context, q Querier, query string, args ...any) ([]Event, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", translate(err))
	}
	scan := scanEvent
	if progress := readProgress(ctx); progress != nil {
		n := 0
		scan = func(row pgx.CollectableRow) (Event, error) {
			if n++; n%progressRows == 0 {
				progress()
			}
			return scanEvent(row)
		}
	}
	evs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", translate(err))
	}
	return evs, nil
}

func scanEvent(row pgx.CollectableRow) (Event, error) { return scanEventAfter(row) }

// scanEventAfter scans a row whose event columns follow the columns that
// pre receives.
func scanEventAfter(row pgx.CollectableRow, pre ...any) (Event, error) {
	var (
		e                Event
		run, prevRun     *uuid.UUID
		fence, prevFence *int64
		exp, prevExp     *time.Time
		holder, reason   *string
		prevHolder       *string
		message          *int64
	)
	err := row.Scan(append(pre, &e.ID, &e.At, &e.Kind, &e.Key.Account, &e.Key.Session, &run, &prevRun,
		&fence, &prevFence, &exp, &prevExp, &holder, &e.Actor, &reason, &prevHolder, &message)...)
	e.RunID, e.PrevRunID = deref(run), deref(prevRun)
	e.Fence, e.PrevFence = deref(fence), deref(prevFence)
	e.ExpiresAt, e.PrevExpiresAt = deref(exp), deref(prevExp)
	e.Holder, e.Reason, e.PrevHolder = deref(holder), deref(reason), deref(prevHolder)
	e.MessageID = deref(message)
	return e, err
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
