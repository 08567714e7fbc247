package lease

import (
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
