package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The history's reads (OwnersAt, Replay) each want one consistent snapshot
// of several statements. Run as a transaction statement by statement, a
// read costs BEGIN, each statement and COMMIT as round trips of their own:
// five for the timeline's opening read, each a wait for the server's
// process and back, which on a loaded machine is most of the time (the
// statements themselves are index ranges). readSnapshot sends them all as
// one pipeline instead: a single round trip, and one more to pin the
// search_path first where the session was not pinned at start-up (the
// statements must be parsed after the pin, and pgx prepares a batch's new
// statements before it sends the batch: see Pinned).

// historyBegin begins the history's reads.
const historyBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

// readSnapshot runs b's statements, in order, in one read-only
// repeatable-read transaction sent as one pipeline, their results handed to
// the callbacks b queued them with. The statements are planned each time
// with their values (plan_cache_mode, for this transaction only): the reads
// are by time, and a prepared statement's generic plan cannot prune
// lease.event's daily partitions by them (see customPlan, which a batch
// cannot use: pgx takes one mode per batch). A failed statement ends the
// pipeline: the transaction is left aborted, and the pool discards the
// connection rather than reuse it.
func (s *Store) readSnapshot(ctx context.Context, b *pgx.Batch) error {
	full := &pgx.Batch{}
	if s.pinned {
		full.Queue(historyBegin)
	}
	full.Queue("SET LOCAL plan_cache_mode = force_custom_plan") // see below
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	full.Queue("COMMIT")
	return s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		if !s.pinned {
			if _, err := c.Exec(ctx, historyBegin+"; "+pinSQL); err != nil {
				return err
			}
		}
		return c.SendBatch(ctx, full).Close()
	})
}

// queueHistoryStart queues the server's clock, the oldest event kept, and
// whether the history is whole (OwnersAt.Whole): its oldest event is the
// first id the database ever issued for one.
func queueHistoryStart(b *pgx.Batch, out *OwnersAt) {
	b.Queue(`SELECT clock_timestamp(), (SELECT min(at) FROM lease.event),
	                coalesce((SELECT min(id) FROM lease.event) =
	                         (SELECT s.seqstart FROM pg_catalog.pg_sequence s
	                           WHERE s.seqrelid = 'lease.event_id_seq'::pg_catalog.regclass), false)`).QueryRow(func(row pgx.Row) error {
		var st *time.Time
		if err := row.Scan(&out.ServerTime, &st, &out.Whole); err != nil {
			return err
		}
		out.HistoryStart = deref(st)
		return nil
	})
}

// queueOwners queues OwnersAt's statement for at and f, its rows collected
// into rows.
func queueOwners(b *pgx.Batch, at time.Time, f HistoryFilter, rows *[]ownerRow) {
	query, args := ownersQuery(at, f)
	b.Queue(query, args...).Query(func(r pgx.Rows) error {
		got, err := pgx.CollectRows(r, scanOwnerRow)
		*rows = got
		return err
	})
}

// queueEvents queues EventsBetween's statement for f, its events collected
// into evs.
func queueEvents(b *pgx.Batch, f HistoryFilter, evs *[]Event) {
	query, args := eventsBetweenQuery(f)
	b.Queue(query, args...).Query(func(r pgx.Rows) error {
		got, err := pgx.CollectRows(r, scanEvent)
		*evs = got
		return err
	})
}

// ownersOf turns OwnersAt's rows into its answer: the holdings at out.At
// (the server's clock and the history's start already read), or the error
// an instant before the history kept or after the clock is.
func ownersOf(out OwnersAt, rows []ownerRow) (OwnersAt, error) {
	if out.HistoryStart.IsZero() || out.At.Before(out.HistoryStart) {
		return out, &PrunedError{At: out.At, HistoryStart: out.HistoryStart}
	}
	if out.At.After(out.ServerTime) {
		return out, &InputError{Field: "at", Problem: fmt.Sprintf("(%s) is after the server's clock (%s)",
			out.At.Format(time.RFC3339Nano), out.ServerTime.Format(time.RFC3339Nano))}
	}
	for _, st := range rows {
		if h, ok := st.holding(out.At); ok {
			out.Holdings = append(out.Holdings, h)
		}
	}
	sortHoldings(out.Holdings)
	return out, nil
}

// Replay is what a reader needs to replay sessions' history from an
// instant on: who held them then and every event since, read in one
// snapshot.
type Replay struct {
	// Start is who held the sessions at the replay's start: the filter's
	// Since, or the history's start when Since is before it (the history
	// kept does not reach back that far; Start.At says where it starts).
	Start OwnersAt
	// Events are the sessions' events from the start on, oldest first, at
	// most the filter's Limit of them (the oldest).
	Events []Event
	// Truncations are the TRUNCATEs of lease.session_lease from the start
	// on, oldest first: they name no session, so no filter of sessions
	// selects them, and each ends every span.
	Truncations []Event
}

// Replay reads who held the sessions f selects at f.Since (its Accounts,
// Sessions and Keys, as OwnersAt), and their events from then on (f's Kinds
// and Until also apply; its Limit caps them, the oldest kept), in one
// snapshot and one round trip. A Since before the history kept starts the
// replay where the history starts (a second round trip); a history with no
// event at all is ErrHistoryPruned, as OwnersAt's.
func (s *Store) Replay(ctx context.Context, f HistoryFilter) (Replay, error) {
	if err := f.validate(); err != nil {
		return Replay{}, err
	}
	f.Descending = false
	out := Replay{Start: OwnersAt{At: f.Since}}
	var rows []ownerRow
	b := &pgx.Batch{}
	queueHistoryStart(b, &out.Start)
	queueOwners(b, f.Since, f, &rows)
	queueEvents(b, f, &out.Events)
	trunc := HistoryFilter{Keys: []Key{{}}, Kinds: []Kind{KindTruncated}, Since: f.Since, Until: f.Until}
	queueEvents(b, trunc, &out.Truncations)
	if err := s.readSnapshot(ctx, b); err != nil {
		return Replay{}, fmt.Errorf("read history: %w", translate(err))
	}
	start, err := ownersOf(out.Start, rows)
	if hs := start.HistoryStart; errors.Is(err, ErrHistoryPruned) && !hs.IsZero() && f.Since.Before(hs) {
		f.Since = hs // nothing before it is kept: replay from there
		return s.Replay(ctx, f)
	}
	out.Start = start
	return out, err
}
