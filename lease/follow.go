package lease

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Owner is who holds a conversation, as Follow sees it change: the run
// (its public id, label and fence) and what it published (its attachment,
// such as the stream it writes to), or that nobody holds it (Free: released
// or expired; the run and fence are then the last holder's, if known).
// Holder and Attachment are untrusted text.
type Owner struct {
	Key        Key
	Free       bool
	RunID      uuid.UUID
	Holder     string
	Fence      int64
	Attachment string
	ExpiresAt  time.Time // on the database clock
	// By is the event of the change (acquired, taken_over, preempted,
	// handed_over, released, force_released), zero when the change has
	// none (the first Owner, an attachment replaced, an expiry). A change
	// the lease's row showed before its notification arrived carries its
	// event too.
	By data.Event
}

// followBacklog bounds the ownership events a Follow reads back after a
// resync of its listener: a gap in which more owners came and went is
// resumed from the newest of them.
const followBacklog = 100

// Follow follows key's conversation: the channel receives its current
// Owner at once, then each change of owner as it happens, in the order
// the fences rose (a run that took over, was preempted, handed over or
// released; an attachment replaced; a lease that expired), and is closed
// when ctx ends or the Client closes. It listens on the Client's one
// listener (the ownership events for the key, read back first) and reads
// the lease's row for each new owner's attachment and every
// Config.PollInterval (an attachment replaced and an expiry write no
// event); after a gap (a resync of the listener: it reconnected or dropped
// notifications) it reads the key's last ownership events and resumes
// after the last owner it gave, skipping none of them (at most
// followBacklog). It needs SELECT on the lease tables (lease_reader) and
// writes nothing. A slow reader holds the follow up; owners are never
// dropped.
func (c *Client) Follow(ctx context.Context, key Key) (<-chan Owner, error) {
	if err := data.ValidateKey(key); err != nil {
		return nil, err
	}
	f := &follow{c: c, key: key, out: make(chan Owner), wake: make(chan struct{}, 1)}
	sub, err := c.notes.listen(key, f.notice)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.notes.unsubscribe(sub)
		return nil, ErrClosed
	}
	c.wg.Add(1) // under mu: never concurrently with Close's Wait
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer close(f.out)
		defer c.notes.unsubscribe(sub)
		f.run(ctx)
	}()
	return f.out, nil
}

// follow is one Follow.
type follow struct {
	c    *Client
	key  Key
	out  chan Owner
	wake chan struct{}

	mu      sync.Mutex
	pending []data.Event // ownership events heard, in the order heard
	resync  bool         // a resync was heard: read the backlog
	closed  bool         // the Client closed

	last  Owner // the last Owner given
	given bool  // one was given
}

// notice runs on the notifier's goroutine: it queues what concerns the
// follow and wakes it.
func (f *follow) notice(n notice) {
	f.mu.Lock()
	switch {
	case n.closed:
		f.closed = true
	case n.resync:
		f.resync = true
	case n.ev.Kind.Grants() || n.ev.Kind.Ends():
		f.pending = append(f.pending, n.ev)
	default:
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	signal(f.wake)
}

// run gives the current owner, then the changes, until ctx ends or the
// Client closes.
func (f *follow) run(ctx context.Context) {
	if !f.readRow(ctx) {
		return
	}
	poll := time.NewTicker(f.c.cfg.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			if !f.readRow(ctx) {
				return
			}
			continue
		case <-f.wake:
		}
		f.mu.Lock()
		evs, resync, closed := f.pending, f.resync, f.closed
		f.pending, f.resync = nil, false
		f.mu.Unlock()
		if closed {
			return
		}
		if resync {
			evs = append(f.backlog(ctx), evs...)
		}
		for _, ev := range evs {
			if !f.apply(ctx, ev) {
				return
			}
		}
		if resync && !f.readRow(ctx) {
			return
		}
	}
}

// apply gives the owner ev makes, if it is news: a grant with a fence
// above the last one given (fences rise with every owner), or the end of
// the owner given last. It reports false once the follow must stop.
func (f *follow) apply(ctx context.Context, ev data.Event) bool {
	switch {
	case ev.Kind.Grants() && (!f.given || ev.Fence > f.last.Fence):
		o := Owner{Key: f.key, RunID: ev.RunID, Holder: ev.Holder, Fence: ev.Fence, ExpiresAt: ev.ExpiresAt, By: ev}
		if l, _, ok, err := f.c.store.Lease(ctx, f.key); err == nil && ok && l.Fence == ev.Fence {
			o.Attachment = l.Attachment // the attachment is on the row, not in the event
		}
		return f.give(ctx, o)
	case ev.Kind.Ends() && f.given && !f.last.Free && ev.Fence >= f.last.Fence:
		return f.give(ctx, Owner{Key: f.key, Free: true, RunID: ev.RunID, Holder: ev.Holder, Fence: ev.Fence, By: ev})
	}
	return true
}

// backlog reads the key's last ownership events (a resync: notifications
// may have been missed), oldest first.
func (f *follow) backlog(ctx context.Context) []data.Event {
	return f.ownership(ctx, followBacklog)
}

// ownership reads the key's last n ownership events, oldest first; none
// when the read fails.
func (f *follow) ownership(ctx context.Context, n int) []data.Event {
	evs, err := f.c.store.EventsBetween(ctx, data.HistoryFilter{Keys: []Key{f.key}, Limit: n, Descending: true,
		Kinds: []data.Kind{data.KindAcquired, data.KindTakenOver, data.KindPreempted, data.KindHandedOver,
			data.KindReleased, data.KindForceReleased}})
	if err != nil {
		return nil // a row read still gives the current owner
	}
	slices.Reverse(evs)
	return evs
}

// readRow reads the lease's row and gives what changed since the last
// Owner given: a new owner the events did not tell (a gap), a replaced
// attachment, an expiry or a row gone. It reports false once the follow
// must stop.
func (f *follow) readRow(ctx context.Context) bool {
	l, clock, ok, err := f.c.store.Lease(ctx, f.key)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil:
		return true // read again at the next poll
	}
	var o Owner
	switch {
	case !ok:
		o = Owner{Key: f.key, Free: true, RunID: f.last.RunID, Holder: f.last.Holder, Fence: f.last.Fence}
	default:
		o = Owner{Key: f.key, RunID: l.RunID, Holder: l.Holder, Fence: l.Fence, Attachment: l.Attachment,
			ExpiresAt: l.ExpiresAt, Free: !l.ExpiresAt.After(clock.Now())}
	}
	switch {
	case !f.given:
	case o.Free && f.last.Free:
		return true
	case !o.Free && o.Fence < f.last.Fence:
		return true // the row read is older than an event given
	case !o.Free && o.Fence == f.last.Fence && !f.last.Free && o.Attachment == f.last.Attachment:
		return true // nothing new
	case o.Free && o.Fence < f.last.Fence:
		return true
	}
	if f.given && (o.Fence > f.last.Fence || o.Free && !f.last.Free) {
		f.byEvent(ctx, &o)
	}
	return f.give(ctx, o)
}

// byEvent gives o, a change of owner the row showed first (its
// notification not yet heard, or lost in a gap), the event that made it,
// when that is the key's last ownership event: the grant of o's fence, or
// the end of it. Its notification, once heard, is then not news.
func (f *follow) byEvent(ctx context.Context, o *Owner) {
	evs := f.ownership(ctx, 1)
	if len(evs) == 0 || evs[0].Fence != o.Fence {
		return
	}
	switch ev := evs[0]; {
	case !o.Free && ev.Kind.Grants():
		o.By = ev
	case o.Free && ev.Kind.Ends():
		o.By, o.RunID, o.Holder = ev, ev.RunID, ev.Holder
	}
}

// give hands o on, and reports false once ctx ended first.
func (f *follow) give(ctx context.Context, o Owner) bool {
	select {
	case f.out <- o:
		f.last, f.given = o, true
		return true
	case <-ctx.Done():
		return false
	case <-f.c.closing:
		return false
	}
}
