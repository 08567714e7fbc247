package lease

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// readBackTimeout bounds one read-back of a batch of notifications.
const readBackTimeout = 10 * time.Second

// readBack turns a batch of notifications into the rows of lease.event they
// name, in one read (data.Listener.ReadBack), and only when one of them
// names a key someone listens to here, or a truncation: the others cost
// nothing (they are reported missing, so the listener's catch-up, when it
// reads, still hands on their rows). A forged id has no row and wakes
// nobody; a forged kind or key is replaced by the row's. Renewal
// notifications name no row and are dropped: a renewal by another run
// follows an ownership change, whose own event is delivered.
//
// A login that may not read lease.event cannot confirm anything: a batch
// that names a watched key then counts as a resync (rate-limited: the
// holders renew early, once a gap, and the waiters try again), and a
// truncation as nothing: a lease the table lost is found lost at its next
// renewal. A read that fails for another reason drops the batch and asks
// for a resync too: something may have been missed.
func (n *notifier) readBack(ctx context.Context, ln *data.Listener, notes []data.Event) (rows []data.Event, resync bool) {
	wanted, unread := n.wanted(notes)
	if len(unread) > 0 {
		ln.Missing(unread)
	}
	if len(wanted) == 0 {
		return nil, false
	}
	if n.unverified.Load() {
		return nil, namesAKey(wanted)
	}
	n.reads.Add(1)
	rctx, cancel := context.WithTimeout(ctx, readBackTimeout)
	defer cancel()
	rows, err := ln.ReadBack(rctx, wanted)
	switch {
	case err == nil:
		return rows, false
	case errors.Is(err, data.ErrPermission) || errors.Is(err, data.ErrSchema):
		n.unverified.Store(true)
		return nil, namesAKey(wanted)
	}
	return nil, ctx.Err() == nil
}

// wanted splits notes into those to read back (a truncation, an event
// naming a key with a subscription, or one that may wake a waiter for the
// slots of the account whose session it names: subscribeAccount,
// subscribeSlots) and the ids of the other transitions. The account's
// other events (a grant, a ticket taken, a refusal) wake none of its
// waiters, so they cost them no read; a forged kind gains nothing, as the
// read replaces it with the row's.
// A message_sent is handed on as a hint instead (notifier.hint), and the
// other message events are read back only for a subscription that wants
// them (WaitMessage): a holder's own deliveries and acknowledgements name
// its key, and reading them back would cost it a read per message.
func (n *notifier) wanted(notes []data.Event) (wanted []data.Event, unread []int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ev := range notes {
		switch {
		case ev.Kind == data.KindRenewed:
		case ev.Kind.Message() && !n.wantsMessagesLocked(ev):
			unread = append(unread, ev.ID)
		case ev.Kind == data.KindTruncated || len(n.subs[ev.Key]) > 0 ||
			ev.Key.Session != "" && wakes(ev.Kind) && len(n.subs[Key{Account: ev.Key.Account}]) > 0: // a waiter for the account's slots
			wanted = append(wanted, ev)
		default:
			unread = append(unread, ev.ID)
		}
	}
	return wanted, unread
}

// wantsMessagesLocked reports whether a subscription of ev's key wants
// its message events read back; n.mu must be held.
func (n *notifier) wantsMessagesLocked(ev data.Event) bool {
	if ev.Kind == data.KindMessageSent {
		return false // handed on as a hint
	}
	for s := range n.subs[ev.Key] {
		if s.messages {
			return true
		}
	}
	return false
}

// namesAKey reports whether one of notes is not a truncation.
func namesAKey(notes []data.Event) bool {
	return slices.ContainsFunc(notes, func(ev data.Event) bool { return ev.Kind != data.KindTruncated })
}
