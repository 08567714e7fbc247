package data

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// The Go library sends an ownership notification itself, right after its
// transaction commits, from a second transaction (internal/sqlcall): a
// NOTIFY inside the transition's own transaction would hold PostgreSQL's
// notify lock through its commit's WAL flush. A transition whose process, or
// server connection, died between that commit and that notification is in
// lease.event but was never notified. So while a listener listens it also
// reads lease.event by id, as poll mode does, every CatchUp (a probe of the
// primary key when nothing happened), and delivers in a FromCatchUp batch
// each row whose notification has not come within catchUpGrace of the read.
// A transition is then seen within CatchUp + catchUpGrace + one read of its
// commit: well under a second with the defaults.
//
// The rows read are matched with the notifications heard by id, kind, key
// and run. A notification is only a hint: anyone who may connect can NOTIFY,
// and a transaction may opt out of the trigger's NOTIFY (what the library
// does, then notifies after its commit), so a role that may write events
// can name its own transition in a forged notification before it commits.
// The consumer reads the notified id back, finds no row and drops it; were
// the notification then counted as heard, the catch-up would skip the row
// once it commits and nothing would deliver it. So the consumer tells the
// listener which notified ids it found no row for (Listener.Missing): the
// listener forgets them as heard, and delivers at once those the catch-up
// has already read and skipped (kept for that, within PollWindow of the
// newest). A notification the listener drops (its consumer is behind) is
// not counted as heard either.
//
// The catch-up's cursor is also the listener's reading position, placed on
// every connection before the consumer is told to resync, whether or not
// the catch-up reads (ListenerConfig.CatchUp): every id at or below the
// newest id read that is not a gap names a row that had committed by then,
// which the consumer's resync reflects, or that the listener has handed to
// it since. A notification naming such an id (anyone may send an old id
// again) is dropped and counted (Listener.Repeated), never delivered: a
// consumer counts each committed event once, and a notification costs it
// nothing when it names what its snapshot already holds. An id that was a
// gap, or is newer, is still open; while the catch-up reads, a second
// notification of an id already handed over is dropped too. Ids more than
// PollWindow below the newest when the first connection starts count as
// committed, as they do for poll mode.

// DefaultCatchUp is how often a listening listener reads lease.event for
// transitions whose notification never came.
const DefaultCatchUp = 300 * time.Millisecond

// catchUpGrace is how long a row the catch-up read waits for its
// notification (sent right after its commit, so usually in flight) before
// the listener delivers it itself.
const catchUpGrace = 100 * time.Millisecond

// maxHeard bounds the notifications remembered for the catch-up: past it a
// row read may be delivered although it was notified, a repeat consumers
// ignore, but a flood of forged notifications cannot grow memory.
const maxHeard = 1 << 16

// catchUp is the catch-up's state: read and delivered on the catch-up's
// goroutine, told of notifications on pgxlisten's.
type catchUp struct {
	mu      sync.Mutex
	gen     int  // bumped by every start: a read made before one is stale
	started bool // the position is known: cur is placed
	reads   bool // the catch-up reads (ListenerConfig.CatchUp > 0): notifications are remembered as heard
	cur     pollCursor
	heard   map[int64]heardNote
	pending map[int64]pendingRow
	skipped map[int64]Event // rows read and not delivered because they were notified
}

// heardNote is what a notification said: enough to tell the row it names.
type heardNote struct {
	kind Kind
	key  Key
	run  uuid.UUID
}

func noteOf(ev Event) heardNote { return heardNote{kind: ev.Kind, key: ev.Key, run: ev.RunID} }

// pendingRow is a row read whose notification has not come yet.
type pendingRow struct {
	ev   Event
	read time.Time
}

// hear records a notification received on the current connection and
// reports whether it is new to the reading position: false when it names
// an id the position covers (a row committed before the connection started,
// or read and handed over since) or, while the catch-up reads, one already
// heard. A renewal notification names no row and is always new.
func (c *catchUp) hear(ev Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started || ev.Kind == KindRenewed {
		return true
	}
	if p, ok := c.pending[ev.ID]; ok { // read, its notification awaited
		if noteOf(p.ev) == noteOf(ev) {
			delete(c.pending, ev.ID)
			c.skip(p.ev)
			return true
		}
	} else if c.cur.covers(ev.ID) {
		return false
	}
	if !c.reads {
		return true
	}
	if _, ok := c.heard[ev.ID]; ok {
		return false // heard already, and not reported missing
	}
	if len(c.heard) < maxHeard {
		c.heard[ev.ID] = noteOf(ev)
	}
	return true
}

// unhear forgets a notification that was not delivered after all.
func (c *catchUp) unhear(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.heard, id)
}

// skip keeps a row the catch-up read and did not deliver because its
// notification was heard, in case the consumer reports it missing; c.mu
// must be held.
func (c *catchUp) skip(ev Event) {
	if len(c.skipped) < maxHeard {
		c.skipped[ev.ID] = ev
	}
}

// Missing tells a listening listener that its consumer read back these
// notified event ids and found no committed row (a forged notification, or
// one sent before its transaction committed). The listener stops counting
// them as heard, so the catch-up delivers each row once it reads it
// committed, and delivers at once (FromCatchUp) those it has read already
// and skipped as notified. A consumer that reads
// notifications back must call it for every id it could not read, or a
// row may never reach it: see catchup.go.
func (l *Listener) Missing(ids []int64) {
	var late []Event
	l.catch.mu.Lock()
	gen := l.catch.gen
	for _, id := range ids {
		delete(l.catch.heard, id)
		if ev, ok := l.catch.skipped[id]; ok {
			delete(l.catch.skipped, id)
			late = append(late, ev)
		}
	}
	l.catch.mu.Unlock()
	slices.SortFunc(late, func(a, b Event) int { return cmp.Compare(a.ID, b.ID) })
	for _, ev := range late {
		l.catchUpDeliver(ev, gen)
	}
}

// startCatchUp places the catch-up's cursor (the reading position) after
// the newest event, once a new connection listens and before the consumer
// is told to resync: what commits before this read, the resync reads; what
// commits after it is either notified or read by the catch-up. After a
// reconnection it goes on from the last connection's cursor instead, with
// its gaps, and lists as gaps the ids missing since (a transaction that drew
// one may still commit, and the resync reads only what has): up to
// maxResume ids; past that it starts after the newest again, keeping the
// old gaps. It places the cursor when the catch-up does not read too
// (CatchUp < 0), as the reading position, after the newest every time:
// nothing then delivers a gap's row, so there is nothing to go on from. A
// failed read returns its error and leaves the position unknown; the
// listener then drops the connection, unless the login may not read
// lease.event at all, and then delivers every notification.
func (l *Listener) startCatchUp(ctx context.Context) error {
	l.catch.mu.Lock()
	l.catch.gen++
	l.catch.started = false
	old := l.catch.cur // no read advances it once started is false
	l.catch.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	reads := l.cfg.CatchUp > 0
	var cur pollCursor
	if old.started && reads {
		ids, err := l.store.eventIDsAfter(rctx, old.after, maxResume)
		if err != nil {
			return err
		}
		if len(ids) < maxResume {
			cur = old.resume(ids)
		}
	}
	if !cur.started {
		ids, err := l.store.recentEventIDs(rctx, l.cfg.PollWindow)
		if err != nil {
			return err
		}
		cur = pollCursor{window: l.cfg.PollWindow}
		cur.start(ids)
		if reads {
			cur.keep(old)
		}
	}
	l.catch.mu.Lock()
	defer l.catch.mu.Unlock()
	l.catch.gen++ // what was collected for delivery meanwhile is the old connection's
	l.catch.cur = cur
	l.catch.heard = make(map[int64]heardNote)
	l.catch.pending = make(map[int64]pendingRow)
	l.catch.skipped = make(map[int64]Event)
	l.catch.started, l.catch.reads = true, reads
	return nil
}

// maxResume is how many ids committed while the listener was away the
// catch-up reads to go on from where it was.
const maxResume = 100_000

// runCatchUp reads lease.event every CatchUp while the listener is live,
// and delivers what was not notified, until ctx ends.
func (l *Listener) runCatchUp(ctx context.Context) {
	if l.cfg.CatchUp <= 0 {
		return
	}
	tick := time.NewTicker(l.cfg.CatchUp)
	defer tick.Stop()
	grace := time.NewTimer(time.Hour)
	grace.Stop()
	defer grace.Stop()
	armed := false // grace runs for the oldest pending row
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if l.State().Status == ListenerLive && l.catchUpRead(ctx) && !armed {
				grace.Reset(catchUpGrace)
				armed = true
			}
		case <-grace.C:
			armed = false
			if next, more := l.deliverUnheard(ctx); more {
				grace.Reset(next)
				armed = true
			}
		}
	}
}

// catchUpRead reads the rows after the cursor and the gaps below it, and
// keeps those not notified yet. It reports whether any is pending.
func (l *Listener) catchUpRead(ctx context.Context) bool {
	l.catch.mu.Lock()
	if !l.catch.started {
		l.catch.mu.Unlock()
		return false
	}
	gen, after, gaps := l.catch.gen, l.catch.cur.after, l.catch.cur.gapList()
	l.catch.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	rows, snap, err := l.store.pollEvents(rctx, after, gaps, l.cfg.PollLimit)
	if err != nil {
		return false // the listener's own checks find a lost connection; read again next time
	}
	now := time.Now()
	l.catch.mu.Lock()
	defer l.catch.mu.Unlock()
	if gen != l.catch.gen || !l.catch.started {
		return false // a new connection started over meanwhile
	}
	evs, _ := l.catch.cur.advance(rows, snap)
	for _, ev := range evs {
		if n, ok := l.catch.heard[ev.ID]; ok && n == noteOf(ev) {
			delete(l.catch.heard, ev.ID)
			l.catch.skip(ev)
			continue
		}
		l.catch.pending[ev.ID] = pendingRow{ev: ev, read: now}
	}
	floor := l.catch.cur.after - l.catch.cur.window
	for id := range l.catch.heard {
		if id <= floor {
			delete(l.catch.heard, id)
		}
	}
	for id := range l.catch.skipped {
		if id <= floor {
			delete(l.catch.skipped, id)
		}
	}
	return len(l.catch.pending) > 0
}

// deliverUnheard delivers, oldest first, the rows read at least
// catchUpGrace ago whose notification has not come. It reports whether
// rows read since are pending, and how long until the first is due.
func (l *Listener) deliverUnheard(ctx context.Context) (next time.Duration, more bool) {
	now := time.Now()
	var late []Event
	next = catchUpGrace
	l.catch.mu.Lock()
	gen := l.catch.gen
	for id, p := range l.catch.pending {
		if wait := catchUpGrace - now.Sub(p.read); wait > 0 {
			next, more = min(next, wait), true
			continue
		}
		late = append(late, p.ev)
		delete(l.catch.pending, id)
	}
	l.catch.mu.Unlock()
	slices.SortFunc(late, func(a, b Event) int { return cmp.Compare(a.ID, b.ID) })
	for _, ev := range late {
		if ctx.Err() != nil {
			return 0, false
		}
		if l.catchUpDeliver(ev, gen) {
			continue
		}
		more = true // kept: due again after catchUpGrace
	}
	return next, more
}

// catchUpDeliver delivers a row the catch-up read while its state was at
// generation gen, and reports whether it is done with it. A row the consumer
// has no room for is kept pending and tried again, never dropped: a resync
// re-reads only a window below the newest event, and the row may lie far
// below it (its transaction was held open). A row read before a new
// connection started over (startCatchUp) is dropped, as startCatchUp drops
// the rows pending then: it came from the server of an earlier connection,
// which after a failover may have lost it, and delivered after the new
// connection's resync marker it would reach the consumer after the new
// server's snapshot. So the row is queued under the catch-up's lock, which
// startCatchUp takes before that marker is queued.
func (l *Listener) catchUpDeliver(ev Event, gen int) bool {
	l.catch.mu.Lock()
	defer l.catch.mu.Unlock()
	if gen != l.catch.gen {
		return true
	}
	if l.box.push(FromCatchUp, []Event{ev}, false) {
		return true
	}
	if l.catch.started {
		l.catch.pending[ev.ID] = pendingRow{ev: ev, read: time.Now()}
	}
	return false
}
