package lease

import (
	"sync/atomic"

	"github.com/leasetop/leasetop/internal/data"
)

// waiter is one waiting acquisition's subscription to its key's
// notifications. wake coalesces.
type waiter struct {
	sub  *subscription
	wake chan struct{}
}

// subscribe registers a waiter for key on the Client's notifier.
func (c *Client) subscribe(key Key) (*waiter, error) { return c.subscribeKinds(key, nil) }

// subscribeKinds is subscribe for a waiter woken by the events of the kinds
// kinds accepts (nil: those wakes accepts), and by every resync.
func (c *Client) subscribeKinds(key Key, kinds func(data.Kind) bool) (*waiter, error) {
	if kinds == nil {
		kinds = wakes
	}
	w := &waiter{wake: make(chan struct{}, 1)}
	sub, err := c.notes.listen(key, func(n notice) {
		// A release may have been missed on a resync, and a closing Client
		// ends the wait: every waiter tries again.
		if n.resync || n.closed || kinds(n.ev.Kind) {
			signal(w.wake)
		}
	})
	if err != nil {
		return nil, err
	}
	w.sub = sub
	return w, nil
}

// subscribeAccount adds to w the events of every session of account, for a
// waiter refused because the account is at its limit: any release,
// takeover or preempt in the account may free a slot. The subscription's
// key is the account with no session, which no lease has.
func (c *Client) subscribeAccount(w *waiter, account string) (*subscription, error) {
	return c.notes.listen(Key{Account: account}, func(n notice) {
		if n.resync || n.closed || wakes(n.ev.Kind) {
			signal(w.wake)
		}
	})
}

// slotTurn tells a Queue waiting in its account's queue when a freed slot
// may be its own, so that a release wakes the head of the queue and not
// every waiter (each woken waiter costs an enqueue and an acquire, and the
// database admits only the oldest: a thundering herd). The tickets ahead
// of the waiter leave the queue only with a queue_left event (granted,
// cancelled, cleared, or expired and purged), which every waiter of the
// account hears: once as many have been heard since its last place as it
// had tickets ahead, it may be the head, and from then on a freed slot
// wakes it. Counting a queue_left of a ticket behind it too can only wake
// it early (one refused try, and its next place is exact), never late.
// What it cannot hear is a ticket ahead that expired and is not yet
// purged, or a holder's lease that expired: the waiter's timers cover
// those (the tickets ahead's expiry, the holders' expiry), and a resync
// wakes it whatever it counted.
type slotTurn struct {
	left atomic.Int64 // queue_left events heard in the account
	due  atomic.Int64 // the count of left at which it may be the head
}

// placed records the waiter's place, taken when left was before: the
// tickets ahead of it then must all leave before its turn.
func (t *slotTurn) placed(before int64, ahead int) { t.due.Store(before + int64(ahead)) }

// subscribeSlots adds to w the events of every session of account, as
// subscribeAccount does, for a Queue waiting in the account's queue: an
// event that frees a slot wakes it only when turn says it may be the head.
func (c *Client) subscribeSlots(w *waiter, account string, turn *slotTurn) (*subscription, error) {
	return c.notes.listen(Key{Account: account}, func(n notice) {
		switch {
		case n.resync || n.closed:
			signal(w.wake)
		case n.ev.Kind == data.KindQueueLeft:
			if turn.left.Add(1) >= turn.due.Load() {
				signal(w.wake)
			}
		case wakes(n.ev.Kind) && turn.left.Load() >= turn.due.Load():
			signal(w.wake)
		}
	})
}

// unsubscribe removes w; the notifier stops its listener after the last
// subscription.
func (c *Client) unsubscribe(w *waiter) { c.notes.unsubscribe(w.sub) }

// wakes reports whether an event of kind k can let a waiter in (or changes
// how long it should sleep).
func wakes(k data.Kind) bool {
	return k == data.KindReleased || k == data.KindForceReleased || k == data.KindTakenOver || k == data.KindPreempted ||
		k == data.KindHandedOver || // an ownership change, as a takeover
		k == data.KindQueueLeft // a ticket ended: the next one may be the head now (Queue)
}
