package lease

import (
	"sync"

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
// every waiter (each woken waiter costs an acquire, and the database
// admits only the oldest: a thundering herd). The database grants the
// account's k free slots to the k oldest waiters (slot_gate_admits); the
// waiter estimates both numbers from what it has heard in the account since
// it last read its place:
//   - the tickets still ahead of it: those that were ahead then, less the
//     queue_left events heard since (a ticket leaves the queue only with
//     one: granted, cancelled, cleared, or expired and purged);
//   - the slots freed for the queue: the releases heard since, less the
//     grants to waiters (queue_left, reason granted).
//
// It wakes when fewer tickets are ahead than slots are free, or when none
// is ahead and a slot may have freed. A queue_left of a ticket behind it
// counted as ahead only wakes it early (one refused try; its next place is
// exact). Slots free when it read its place count as none: the waiters
// ahead take them, and their grants then wake the next (the chain of
// queue_left events wakes each head in turn). What it cannot hear is a
// ticket ahead that expired and is not yet purged, or a holder's lease
// that expired: the waiter's timers cover those (the tickets ahead's
// expiry, the holders' expiry), and a resync wakes it whatever it counted.
type slotTurn struct {
	mu    sync.Mutex
	heard slotsHeard // since the Queue began
	at    slotsHeard // when the waiter last read its place
	ahead int64      // the tickets ahead of it then
}

// slotsHeard counts the events a waiter for a slot heard in its account.
type slotsHeard struct {
	left    int64 // queue_left events
	granted int64 // of which reason granted
	freed   int64 // releases (released, force_released)
	waking  int64 // events of a kind that wakes (wakes), these included
}

// mark returns what has been heard so far, to pass to placed once the
// place read after it is known.
func (t *slotTurn) mark() slotsHeard {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.heard
}

// placed records the waiter's place (ahead tickets ahead of it), read
// after at was heard, and reports whether what was heard since at already
// wakes it: those events were weighed against its former place as they
// came, and may have freed a slot for the new one.
func (t *slotTurn) placed(at slotsHeard, ahead int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at, t.ahead = at, int64(ahead)
	return t.heard.waking > at.waking && t.dueLocked()
}

// hear counts ev and reports whether it should wake the waiter.
func (t *slotTurn) hear(ev data.Event) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case data.KindQueueLeft:
		t.heard.left++
		if ev.Reason == "granted" {
			t.heard.granted++
		}
	case data.KindReleased, data.KindForceReleased:
		t.heard.freed++
	default:
		if !wakes(ev.Kind) {
			return false
		}
	}
	t.heard.waking++
	return t.dueLocked()
}

// dueLocked reports whether a freed slot may be the waiter's: fewer
// tickets ahead of it than slots freed, or none ahead; t.mu must be held.
func (t *slotTurn) dueLocked() bool {
	ahead := t.ahead - (t.heard.left - t.at.left)
	free := (t.heard.freed - t.at.freed) - (t.heard.granted - t.at.granted)
	return ahead <= 0 || ahead < free
}

// subscribeSlots adds to w the events of every session of account, as
// subscribeAccount does, for a Queue waiting in the account's queue: an
// event wakes it only when turn says a freed slot may be its own.
func (c *Client) subscribeSlots(w *waiter, account string, turn *slotTurn) (*subscription, error) {
	return c.notes.listen(Key{Account: account}, func(n notice) {
		if n.resync || n.closed || turn.hear(n.ev) {
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
