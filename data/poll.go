package data

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
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
// or rolled back), as far as PollWindow back. Each row is delivered once, on
// Rows. The first read only finds where to start; then the listener signals
// Resync, as after a LISTEN: every event that commits later is delivered.
// A failed read is retried on the next tick from where the last one ended,
// so an outage loses nothing.
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
		signal(l.resync)
		return false, nil
	}
	rows, err := l.store.pollEvents(rctx, cur.after, cur.gapList(), l.cfg.PollLimit)
	if err != nil {
		return false, err
	}
	evs, newer := cur.advance(rows)
	if len(evs) == 0 {
		return false, nil
	}
	select {
	case l.rows <- evs:
	case <-ctx.Done():
		return false, nil
	}
	l.touch()
	if slices.ContainsFunc(evs, func(e Event) bool { return e.Kind == KindTruncated }) {
		signal(l.resync)
	}
	return newer >= l.cfg.PollLimit, nil
}

// pollCursor is where poll mode stands: the highest id read, and the ids
// below it not seen yet, within window of it.
type pollCursor struct {
	window  int64
	started bool
	after   int64
	gaps    map[int64]struct{}
}

// start places the cursor after the newest event; ids is every id within
// window of it, oldest first: the missing ones are gaps.
func (c *pollCursor) start(ids []int64) {
	c.started, c.gaps = true, make(map[int64]struct{})
	if len(ids) == 0 {
		return
	}
	c.after = ids[len(ids)-1]
	c.mark(max(c.after-c.window, 0), ids)
}

// mark records as gaps the ids in (from, the last of ids] that ids lacks,
// within window of the last; ids is ascending. Ids can jump far (a new
// primary moves the event ids 2^43 on, lease.follow_timeline): the ids
// between are not enumerated.
func (c *pollCursor) mark(from int64, ids []int64) {
	if len(ids) == 0 {
		return
	}
	next := max(from+1, ids[len(ids)-1]-c.window+1)
	for _, id := range ids {
		for ; next < id; next++ {
			c.gaps[next] = struct{}{}
		}
		next = max(next, id+1)
	}
}

// gapList returns the gaps, ascending.
func (c *pollCursor) gapList() []int64 { return slices.Sorted(maps.Keys(c.gaps)) }

// advance takes a poll's rows (ascending ids: gaps filled, then newer rows)
// and returns the events to deliver and how many rows were newer than the
// cursor. Gaps more than window below the new cursor are given up.
func (c *pollCursor) advance(rows []Event) (evs []Event, newer int) {
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
	if len(ids) > 0 {
		c.after = ids[len(ids)-1]
		c.mark(from, ids)
	}
	for id := range c.gaps {
		if id <= c.after-c.window {
			delete(c.gaps, id)
		}
	}
	return evs, newer
}

// recentEventIDs returns the ids of the events within window of the newest
// one, ascending: where poll mode starts. An index-only scan.
func (s *Store) recentEventIDs(ctx context.Context, window int64) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM lease.event
		WHERE id > (SELECT coalesce(max(id), 0) FROM lease.event) - $1 ORDER BY id`, window)
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
// idle poll reads one index page and no row.
const (
	pollSQL     = `SELECT ` + eventColumns + ` FROM lease.event WHERE id > $1 ORDER BY id LIMIT $2`
	pollGapsSQL = `SELECT * FROM (SELECT ` + eventColumns + ` FROM lease.event WHERE id = ANY($3)) gaps
		UNION ALL (` + pollSQL + `)`
)

// pollEvents reads the events with id > after (up to limit, oldest first)
// and those whose id is in gaps, ascending.
func (s *Store) pollEvents(ctx context.Context, after int64, gaps []int64, limit int) ([]Event, error) {
	var (
		evs []Event
		err error
	)
	if len(gaps) == 0 {
		evs, err = s.events(ctx, pollSQL, after, limit)
	} else {
		evs, err = s.events(ctx, pollGapsSQL, after, limit, gaps)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(evs, func(a, b Event) int { return cmp.Compare(a.ID, b.ID) })
	return evs, nil
}
