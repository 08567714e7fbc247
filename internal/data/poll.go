package data

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultFallbackPoll is how often a listener that switched to poll mode by
// itself reads lease.event.
const DefaultFallbackPoll = 250 * time.Millisecond

// pollTimeout bounds one poll's read.
const pollTimeout = 10 * time.Second

// PollCause says why a listener polls.
type PollCause int

// Poll causes.
const (
	PollNone         PollCause = iota // it listens
	PollRequested                     // poll mode was asked for (ListenerConfig.Poll, Options.Poll)
	PollStandby                       // the server is a hot standby: no LISTEN, no NOTIFY there
	PollListenFailed                  // the server refused LISTEN
	PollNoDelivery                    // a new listen connection did not hear its own ping
	PollPooler                        // the store's own connection goes through a pooler, and no listen DSN was given
)

// PollReason is why a listener polls: a cause, and the server's message
// (untrusted text) or the ping's timeout where there is one.
type PollReason struct {
	Cause  PollCause
	Detail string
}

// String says why, on one line.
func (r PollReason) String() string {
	switch r.Cause {
	case PollNone:
		return "listening"
	case PollRequested:
		return "poll mode requested"
	case PollStandby:
		return "the server is a hot standby: LISTEN cannot run there"
	case PollListenFailed:
		return "LISTEN failed: " + r.Detail
	case PollPooler:
		return "the connection goes through a pooler, where a LISTEN would stay behind on a shared server connection: set a listen DSN"
	default:
		return "LISTEN heard nothing in " + r.Detail + " (a transaction pooler?): set a listen DSN"
	}
}

// pollSwitch ends listening: the listener polls from now on, for why.
type pollSwitch struct{ why PollReason }

func (e *pollSwitch) Error() string { return "switching to poll mode: " + e.why.String() }

// pollMemory remembers, per listen connection string ("" for the store's
// own), why listening cannot work there, so that the store's later listeners
// (a lease.Client starts one per wait) poll from the start instead of
// finding out again.
type pollMemory struct {
	mu  sync.Mutex
	why map[string]PollReason
}

func (m *pollMemory) set(dsn string, why PollReason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.why == nil {
		m.why = make(map[string]PollReason)
	}
	m.why[dsn] = why
}

func (m *pollMemory) get(dsn string) PollReason {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.why[dsn]
}

// pollFromStart returns why the listener polls from the start: asked to, or
// its store already found that listening cannot work on its connection.
func (l *Listener) pollFromStart() PollReason {
	if l.cfg.Poll > 0 {
		return PollReason{Cause: PollRequested}
	}
	return l.store.polls.get(l.cfg.DSN)
}

// poll is poll mode, until ctx ends: every interval it reads the rows of
// lease.event after the highest id read so far, and the ids below it that it
// has not seen yet (a gap: a transaction that drew the id has not committed,
// or rolled back) until no transaction that could fill them is in progress
// (pollCursor). Each row is delivered once, in a FromPoll batch, and only
// as many as the consumer has room for are read (the rest wait in the
// table). The first read only finds where to start; then the listener
// queues a resync, as after a LISTEN: every event that commits later is
// delivered. A failed read is retried on the next tick from where the last
// one ended, so an outage loses nothing.
func (l *Listener) poll(ctx context.Context, why PollReason) {
	every := cmp.Or(l.cfg.Poll, l.cfg.FallbackPoll)
	l.mu.Lock()
	l.state.Poll, l.state.Reason = every, why
	l.mu.Unlock()
	l.setStatus(ListenerConnecting, nil)
	if on := l.store.opt.OnPoll; on != nil {
		on(l.State())
	}
	cur := pollCursor{window: l.cfg.PollWindow}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		full, err := l.pollOnce(ctx, &cur)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			l.failed(err)
		case l.State().Status != ListenerPolling:
			l.setStatus(ListenerPolling, nil)
		}
		if full {
			timer.Reset(0)
			continue
		}
		timer.Reset(max(every-time.Since(start), 0))
	}
}

// pollOnce makes one read and delivers what it found. It reports whether
// the read was cut at PollLimit (more is waiting).
func (l *Listener) pollOnce(ctx context.Context, cur *pollCursor) (full bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	if !cur.started {
		ids, err := l.store.recentEventIDs(rctx, cur.window)
		if err != nil {
			return false, err
		}
		cur.start(ids)
		l.setStatus(ListenerPolling, nil) // before the resync: a consumer that resyncs sees POLL
		l.box.resync()
		return false, nil
	}
	limit := min(l.cfg.PollLimit, l.box.room())
	if limit == 0 {
		return false, nil // the consumer is behind: the rows wait in the table
	}
	rows, snap, err := l.store.pollEvents(rctx, cur.after, cur.gapList(), limit)
	if err != nil {
		return false, err
	}
	evs, newer := cur.advance(rows, snap)
	if len(evs) == 0 {
		return false, nil
	}
	l.box.push(FromPoll, evs, true)
	l.touch()
	if slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == KindTruncated }) {
		l.box.resync()
	}
	return newer >= limit, nil
}

// pollCursor is where poll mode (and the catch-up) stands: the highest id
// read, and the ids below it not seen yet (gaps).
//
// Event ids are drawn in order, before their transaction commits, so a gap
// below an id that was read was drawn by a transaction that had begun
// before that read: at the read it was in progress, or it had rolled back.
// Such a transaction may stay open as long as it likes (anyone who may
// write events may hold one open, and opt out of the trigger's NOTIFY), so
// a gap is never given up because later ids went by: only once no
// transaction that could still fill it is in progress. Each read returns
// its snapshot's xmin (the oldest transaction still in progress) and the
// next transaction id (read after the snapshot was taken). A gap found in
// one read gets the next read's next-xid as its bound: every transaction
// that could have drawn the gap had its id by then (a transition draws its
// event id after its first write, which assigns its transaction id; the
// bound is taken one read later so that even an id drawn just before that
// assignment is covered). A gap is given up in the first read whose xmin
// has reached its bound and that still lacks it: each transaction that
// could fill it had ended before that read's snapshot, and had it
// committed, the read would have returned its row.
//
// Memory: gaps are the ids drawn and not committed, that is those held by
// transactions still open and those rolled back while some transaction
// older than them was still open (anywhere in the cluster: xmin is
// cluster-wide). A role that holds a transaction open for long keeps every
// gap found meanwhile; idle_in_transaction_session_timeout or
// transaction_timeout bound how long (docs/RELIABILITY.md).
type pollCursor struct {
	window  int64 // how far below the newest id start looks for gaps
	started bool
	after   int64
	gaps    map[int64]uint64 // gap id -> next-xid bound; 0 until the read after it was found
}

// pollSnapshot is what a read's snapshot says about transactions: xmin,
// the oldest one still in progress, and next, the next id to be assigned,
// read after the snapshot was taken (both full 64-bit transaction ids).
type pollSnapshot struct{ xmin, next uint64 }

// failoverStride is how far lease.move_past_failover moves the event ids
// after a failover, on a new WAL timeline: the ids between the old WAL
// timeline's floor and the new one's were never drawn, and are not gaps.
const failoverStride = 1 << 43

// start places the cursor after the newest event; ids is every id within
// window of it, oldest first: the missing ones are gaps.
func (c *pollCursor) start(ids []int64) {
	c.started, c.gaps = true, make(map[int64]uint64)
	if len(ids) == 0 {
		return
	}
	c.after = ids[len(ids)-1]
	c.mark(max(c.after-c.window, 0), ids)
}

// keep carries over the gaps of old, an earlier cursor on the same
// database (the catch-up starts a new one on every connection), that are
// below this one's position: the transactions that may fill them may still
// commit.
func (c *pollCursor) keep(old pollCursor) {
	for id, bound := range old.gaps {
		if id < c.after {
			if _, ok := c.gaps[id]; !ok {
				c.gaps[id] = bound
			}
		}
	}
}

// resume returns a copy of the cursor moved past ids, every id after it
// (ascending), with the ids they lack as gaps.
func (c *pollCursor) resume(ids []int64) pollCursor {
	r := pollCursor{window: c.window, started: true, after: c.after, gaps: maps.Clone(c.gaps)}
	if r.gaps == nil {
		r.gaps = make(map[int64]uint64)
	}
	if len(ids) > 0 {
		r.mark(c.after, ids)
		r.after = ids[len(ids)-1]
	}
	return r
}

// mark records as gaps the ids in (from, the last of ids] that ids lacks;
// ids is ascending. A failover moves the event ids 2^43 on
// (lease.follow_failover): the ids between are not gaps.
func (c *pollCursor) mark(from int64, ids []int64) {
	next := from + 1
	for _, id := range ids {
		next = max(next, id-id%failoverStride+1)
		for ; next < id; next++ {
			if _, ok := c.gaps[next]; !ok {
				c.gaps[next] = 0
			}
		}
		next = max(next, id+1)
	}
}

// covers reports whether id is behind the cursor: at or below the newest
// id read and not a gap, so its row had committed when it was read (or the
// id was never drawn, or its transaction rolled back).
func (c *pollCursor) covers(id int64) bool {
	if !c.started || id > c.after {
		return false
	}
	_, gap := c.gaps[id]
	return !gap
}

// gapList returns the gaps, ascending.
func (c *pollCursor) gapList() []int64 { return slices.Sorted(maps.Keys(c.gaps)) }

// advance takes a read's rows (ascending ids: gaps filled, then newer rows)
// and its snapshot, and returns the events to deliver and how many rows were
// newer than the cursor. The read asked for every gap, so a gap it did not
// return is given up when snap shows that nothing that could fill it is
// still in progress (see pollCursor).
func (c *pollCursor) advance(rows []Event, snap pollSnapshot) (evs []Event, newer int) {
	var unbound []int64 // gaps found by an earlier read, waiting for this one's bound
	for id, bound := range c.gaps {
		if bound == 0 {
			unbound = append(unbound, id)
		}
	}
	var ids []int64
	from := c.after
	for _, ev := range rows {
		if ev.ID <= c.after {
			if _, ok := c.gaps[ev.ID]; !ok {
				continue // read twice in one poll: not again
			}
			delete(c.gaps, ev.ID)
		} else {
			ids = append(ids, ev.ID)
			newer++
		}
		evs = append(evs, ev)
	}
	for id, bound := range c.gaps {
		if bound != 0 && snap.xmin >= bound {
			delete(c.gaps, id) // rolled back
		}
	}
	for _, id := range unbound {
		if _, ok := c.gaps[id]; ok {
			c.gaps[id] = max(snap.next, 1)
		}
	}
	if len(ids) > 0 {
		c.after = ids[len(ids)-1]
		c.mark(from, ids)
	}
	return evs, newer
}

// recentEventIDs returns the ids of the events within window of the newest
// one, ascending: where poll mode starts. An index-only scan.
func (s *Store) recentEventIDs(ctx context.Context, window int64) ([]int64, error) {
	return s.eventIDs(ctx, `SELECT id FROM lease.event
		WHERE id > (SELECT coalesce(max(id), 0) FROM lease.event) - $1 ORDER BY id`, window)
}

// eventIDsAfter returns the ids of up to limit events after the id after,
// ascending. An index-only scan.
func (s *Store) eventIDsAfter(ctx context.Context, after int64, limit int) ([]int64, error) {
	return s.eventIDs(ctx, `SELECT id FROM lease.event WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
}

func (s *Store) eventIDs(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := s.Pinned().Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("poll events: %w", translate(err))
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("poll events: %w", translate(err))
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("poll events: %w", translate(err))
	}
	return ids, nil
}

// pollSQL and pollGapsSQL are poll mode's reads: the newer events, and with
// gaps the gap ids too. Both are probes of lease.event's primary key: an
// idle poll reads one index page and no row. pollReadSQL wraps either in one
// statement with its snapshot's xmin and the next transaction id (xmax, one
// past the newest completed transaction, plus age() of it, which counts
// from the next id to be assigned), so that the gaps it does not return can
// be judged by the snapshot the rows were read with. A row of zeros and
// NULLs stands for no event. It works on a hot standby too.
const (
	pollSQL     = `SELECT ` + eventColumns + ` FROM lease.event WHERE id > $1 ORDER BY id LIMIT $2`
	pollGapsSQL = `SELECT * FROM (SELECT ` + eventColumns + ` FROM lease.event WHERE id = ANY($3)) gaps
		UNION ALL (` + pollSQL + `)`
	pollEventsPart = `/* events */`
	pollReadSQL    = `WITH x AS (
		SELECT pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())::text::bigint AS xmin,
		       pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint AS xmax)
		SELECT x.xmin, x.xmax + (b.low - x.xmax % 4294967296) + pg_catalog.age(b.low::text::xid),
		       coalesce(e.id, 0), coalesce(e.at, 'epoch'), coalesce(e.kind, ''), coalesce(e.account_id, ''),
		       coalesce(e.session_id, ''), e.run_id, e.prev_run_id, e.fence, e.prev_fence, e.expires_at,
		       e.prev_expires_at, e.holder, coalesce(e.actor, ''), e.reason, e.prev_holder, e.message_id
		  FROM x
		 CROSS JOIN LATERAL (SELECT greatest(x.xmax % 4294967296, 3) AS low) b
		  LEFT JOIN LATERAL (` + pollEventsPart + `) e ON true`
)

// pollQuery is the statement a read sends: pollReadSQL around pollSQL, or
// around pollGapsSQL when there are gaps.
func pollQuery(gaps bool) string {
	if gaps {
		return strings.Replace(pollReadSQL, pollEventsPart, pollGapsSQL, 1)
	}
	return strings.Replace(pollReadSQL, pollEventsPart, pollSQL, 1)
}

// pollEvents reads the events with id > after (up to limit, oldest first)
// and those whose id is in gaps, ascending, and the read's snapshot.
func (s *Store) pollEvents(ctx context.Context, after int64, gaps []int64, limit int) ([]Event, pollSnapshot, error) {
	query, args := pollQuery(false), []any{after, limit}
	if len(gaps) > 0 {
		query, args = pollQuery(true), append(args, gaps)
	}
	var snap pollSnapshot
	rows, err := s.Pinned().Query(ctx, query, args...)
	if err != nil {
		return nil, snap, fmt.Errorf("poll events: %w", translate(err))
	}
	var xmin, next int64
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		return scanEventAfter(row, &xmin, &next)
	})
	if err != nil {
		return nil, snap, fmt.Errorf("poll events: %w", translate(err))
	}
	snap = pollSnapshot{xmin: uint64(xmin), next: uint64(next)}
	evs = slices.DeleteFunc(evs, func(e Event) bool { return e.ID == 0 })
	slices.SortFunc(evs, func(a, b Event) int { return cmp.Compare(a.ID, b.ID) })
	return evs, snap, nil
}
