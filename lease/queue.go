package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// ErrQueueFull is returned by Queue when the session's queue holds as many
// live tickets as it may (data.QueueLimit), or when this login holds its
// share of them (data.QueueShare, data.ErrQueueShareFull): nothing was
// written.
var ErrQueueFull = data.ErrQueueFull

// ErrTicketCleared is returned by Queue when an operator cleared its ticket
// (leasetop queue --clear, the monitor's clear-queue key): it stops waiting,
// holding nothing. A new Queue call may queue again.
var ErrTicketCleared = data.ErrTicketCleared

// Queue acquires p's lease in turn, waiting as long as ctx allows: it takes
// a ticket in the session's queue (a durable FIFO on the database, see
// data.Store.Enqueue), keeps it alive while it waits, and acquires when its
// ticket is the head and the lease is free. While the queue has a live
// ticket nobody else can take the free lease, so the waiters are granted it
// in the order they queued.
//
// The ticket lives for RenewInterval and is renewed every half of it, so a
// waiter that dies (kill -9) stops renewing and its ticket leaves the queue
// within RenewInterval of its last renewal, recorded with a queue_left
// event (reason expired) by the next waiter's renewal: a dead head holds
// the queue up for at most that, never a lease TTL. A waiter stalled past
// its ticket's expiry loses its place and queues again at the tail.
//
// In an account or pool at its limit (Request.Pool, a *LimitError from Try)
// it waits in the account's queue: its ticket holds its place among the
// account's waiters, and each freed slot goes to the oldest of them; a newer
// Try or Wait of the account is refused meanwhile. OnPlace then counts the
// account's waiters ahead too. A dead waiter stops holding the slot when its
// ticket expires, as above.
//
// It wakes on the notifications for its key (a release, a forced release, a
// takeover, a ticket that left the queue) and, once at its account's limit,
// for a release in any session of the account that may free a slot for it
// (fewer tickets are ahead of it than slots freed: a freed slot wakes the
// head of the account's queue, not every waiter); otherwise when the
// lease, a slot's holder or the tickets ahead could expire, or after
// PollInterval. When the key is free
// and has no queue it acquires at once, as Try does. OnPlace reports its
// place as it moves up.
//
// When ctx ends first, Queue cancels its ticket (the next waiter moves up at
// once) and returns context.Cause(ctx), holding nothing; ErrQueueFull when
// the queue is full; ErrTicketCleared when an operator cleared its ticket;
// ErrClosed when the Client is closed.
func (c *Client) Queue(ctx context.Context, p Permit, opts ...QueueOption) (*Lease, error) {
	if err := c.check(p); err != nil {
		return nil, err
	}
	return c.queue(ctx, p, &tracker{runID: uuid.New()}, opts...)
}

// queue is Queue for tr's run id (a fresh one, or an ask's: askFallback).
func (c *Client) queue(ctx context.Context, p Permit, tr *tracker, opts ...QueueOption) (*Lease, error) {
	w, err := c.subscribe(p.req.Key)
	if err != nil {
		return nil, err
	}
	defer c.unsubscribe(w)
	q := &queuer{c: c, req: p.req, tr: tr, w: w, ahead: -1}
	defer func() {
		if q.account != nil {
			c.notes.unsubscribe(q.account)
		}
	}()
	for _, o := range opts {
		o(&q.opts)
	}
	return q.run(ctx, w)
}

// A QueueOption changes what Queue does while it waits.
type QueueOption func(*queueOptions)

type queueOptions struct {
	place func(ahead int)
}

// OnPlace has Queue call f with the number of live tickets ahead of its own
// when it takes its ticket and each time that number changes (a ticket
// ahead was granted, cancelled, cleared or expired). f runs on Queue's
// goroutine before it goes on, so it must return quickly.
func OnPlace(f func(ahead int)) QueueOption {
	return func(o *queueOptions) { o.place = f }
}

// queuer is one Queue call: its run id (which owns the ticket) and what the
// last answers said.
type queuer struct {
	c       *Client
	req     Request
	opts    queueOptions
	tr      *tracker
	backoff backoff
	tickets []uuid.UUID // every run id that may hold a ticket, to cancel on give-up
	ahead   int         // the place last reported to OnPlace; -1 before the first
	w       *waiter
	// account is the subscription to the account's events once the run
	// was refused for its account's limit: its ticket waits in the
	// account's queue, and a slot frees in any session of the account.
	account *subscription
	// turn says when a freed slot in the account may be this run's: only
	// then does a release in another session wake it (slotTurn).
	turn slotTurn
	// atLimit: the last try was refused for the account's limit.
	atLimit bool
}

func (q *queuer) run(ctx context.Context, w *waiter) (*Lease, error) {
	c := q.c
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	woken := false
	for {
		if c.isClosed() {
			return q.giveUp(ErrClosed)
		}
		l, delay, err := q.step(ctx, woken)
		switch {
		case l != nil:
			return l, nil
		case ctx.Err() != nil:
			return q.giveUp(context.Cause(ctx))
		case err != nil:
			return q.giveUp(err)
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return q.giveUp(context.Cause(ctx))
		case <-w.wake:
			timer.Stop()
			woken = true
		case <-timer.C:
			woken = false
		}
	}
}

// step takes or renews the ticket and, when it is the head (or no queue is
// needed), tries to acquire. It returns the lease, or how long to wait
// before the next step, or an error that ends Queue. A run in its
// account's queue that a notification woke (woken) tries first and renews
// its ticket only when refused: a release wakes the head of the account's
// queue (slotTurn), whose grant then costs one call, not two.
func (q *queuer) step(ctx context.Context, woken bool) (*Lease, time.Duration, error) {
	c := q.c
	ttl := c.cfg.RenewInterval // a ticket lives a renewal interval: see Queue
	renewBy := ttl / 2         // and is renewed twice in it
	run := q.tr.runID
	tried, delay := false, jitter(c.cfg.PollInterval)
	heard := q.turn.mark() // before the try and the place: see slotTurn
	if woken && q.account != nil {
		l, d, err := q.try(ctx)
		if l != nil || err != nil || ctx.Err() != nil {
			return l, 0, err
		}
		tried, delay = true, d
	}
	// Counted before the call: a ticket may be committed while its reply
	// is lost to ctx, and giveUp must cancel it too (cancelling a ticket
	// that was never taken changes nothing).
	if len(q.tickets) == 0 || q.tickets[len(q.tickets)-1] != run {
		q.tickets = append(q.tickets, run)
	}
	place, err := c.store.Enqueue(ctx, q.req.Key, run, ttl, q.req.Holder)
	if err != nil {
		if errors.Is(err, data.ErrQueueFull) || errors.Is(err, data.ErrTicketCleared) {
			return nil, 0, fmt.Errorf("queue %q: %w", q.req.Key.String(), err)
		}
		delay, retry := c.retryDelay(err, &q.backoff)
		if !retry {
			return nil, 0, err
		}
		return nil, min(delay, renewBy), nil
	}
	q.backoff.answer()
	due := q.turn.placed(heard, place.Ahead)
	q.report(place)
	// A run tries when its place is the head. In its account's queue it
	// has tried already when a notification woke it (the database grants
	// the account's k free slots to the k oldest waiters: slotTurn wakes it
	// when it may be among them); a timer's step tries only at the head,
	// and the grants ahead wake the next in turn.
	if place.Ahead == 0 && !tried {
		l, d, err := q.try(ctx)
		if l != nil || err != nil || ctx.Err() != nil {
			return l, 0, err
		}
		delay = d
		if q.account == nil && q.atLimit {
			if q.account, err = c.subscribeSlots(q.w, q.req.Key.Account, &q.turn); err != nil {
				return nil, 0, err
			}
			delay = 0 // take the ticket's place in the account's queue now
		}
	}
	if !place.AheadExpiresAt.IsZero() {
		// The tickets ahead end at the latest then unless renewed, counted
		// on the database clock from this call's own now (ExpiresAt - TTL).
		delay = min(delay, afterExpiry(place.AheadExpiresAt.Sub(place.ExpiresAt.Add(-ttl))))
	}
	if place.Ticketed() {
		delay = min(delay, renewBy)
	}
	if due && tried {
		delay = 0 // refused, but a slot may have freed for it since: try again now
	}
	return nil, delay, nil
}

// try acquires once. It returns the lease, or how long to wait before the
// next step when refused (q.atLimit says whether for the account's limit),
// or an error that ends Queue; nothing when ctx ended.
func (q *queuer) try(ctx context.Context) (*Lease, time.Duration, error) {
	c := q.c
	l, err := c.try(ctx, q.req, q.tr, c.acquire)
	if err == nil {
		return l, 0, nil
	}
	if ctx.Err() != nil {
		return nil, 0, nil
	}
	d, retry := c.retryDelay(err, &q.backoff)
	if !retry {
		return nil, 0, err
	}
	q.atLimit = errors.Is(err, data.ErrAtLimit)
	return nil, d, nil
}

// report calls OnPlace's function when the ticket's place changed.
func (q *queuer) report(place data.Place) {
	if q.opts.place == nil || !place.Ticketed() || place.Ahead == q.ahead {
		return
	}
	q.ahead = place.Ahead
	q.opts.place(place.Ahead)
}

// giveUp cancels the tickets taken and releases a grant whose reply may
// have been lost, in the background, then returns err.
func (q *queuer) giveUp(err error) (*Lease, error) {
	c := q.c
	if q.tr.maybeGranted() {
		c.cleanup(q.req.Key, q.tr.runID, q.tr.lastSent.Add(c.cfg.TTL-c.cfg.SafetyMargin))
	}
	if len(q.tickets) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReleaseTimeout)
		defer cancel()
		for _, run := range q.tickets {
			_, _ = c.store.CancelTicket(ctx, q.req.Key, run) // best effort: otherwise it expires by itself
		}
	}
	return nil, err
}
