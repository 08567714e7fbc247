package lease

import (
	"context"

	"github.com/leasetop/leasetop/data"
)

// waiter is one waiting acquisition's subscription to its key's
// notifications. wake coalesces.
type waiter struct {
	key   Key
	wake  chan struct{}
	kinds func(data.Kind) bool // the events that wake it; nil: wakes
}

// subscribe registers a waiter for key, starting the shared listener for the
// first one.
func (c *Client) subscribe(key Key) (*waiter, error) { return c.subscribeKinds(key, nil) }

// subscribeKinds is subscribe for a waiter woken by the events of the kinds
// kinds accepts (nil: wakes), and by every resync.
func (c *Client) subscribeKinds(key Key, kinds func(data.Kind) bool) (*waiter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	w := &waiter{key: key, wake: make(chan struct{}, 1), kinds: kinds}
	set := c.waiters[key]
	if set == nil {
		set = make(map[*waiter]struct{})
		c.waiters[key] = set
	}
	set[w] = struct{}{}
	c.nwait++
	if c.stopLn == nil {
		ctx, cancel := context.WithCancel(context.Background())
		c.stopLn = cancel
		c.wg.Go(func() { c.listen(ctx) })
	}
	return w, nil
}

// unsubscribe removes w, stopping the listener after the last waiter: a
// process that holds its lease needs no listener connection.
func (c *Client) unsubscribe(w *waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.waiters[w.key]
	if _, ok := set[w]; !ok {
		return
	}
	delete(set, w)
	if len(set) == 0 {
		delete(c.waiters, w.key)
	}
	c.nwait--
	if c.nwait == 0 && c.stopLn != nil {
		c.stopLn()
		c.stopLn = nil
	}
}

// listen runs one data.Listener and fans its events out to the waiters of
// each key until ctx is cancelled: notifications, or in poll mode the rows
// it reads from lease.event.
func (c *Client) listen(ctx context.Context) {
	ln := c.store.NewListener(c.cfg.Listener)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ln.Run(ctx) // returns nil when ctx is cancelled; it reconnects on its own
	}()
	defer func() { <-done }()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-ln.Events():
			c.wake(func(k Key) bool { return k == ev.Key }, ev.Kind)
		case rows := <-ln.Rows():
			for _, ev := range rows {
				c.wake(func(k Key) bool { return k == ev.Key }, ev.Kind)
			}
		case <-ln.Resync():
			// (Re)connected or events were dropped: a release may have been
			// missed, so every waiter tries again.
			c.wake(func(Key) bool { return true }, "")
		}
	}
}

// wakes reports whether an event of kind k can let a waiter in (or changes
// how long it should sleep).
func wakes(k data.Kind) bool {
	return k == data.KindReleased || k == data.KindForceReleased || k == data.KindTakenOver
}

// wake wakes the waiters of the keys match accepts that an event of kind
// wakes; kind "" (a resync) wakes them all.
func (c *Client) wake(match func(Key) bool, kind data.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, set := range c.waiters {
		if !match(k) {
			continue
		}
		for w := range set {
			switch {
			case kind == "", w.kinds == nil && wakes(kind), w.kinds != nil && w.kinds(kind):
				signal(w.wake)
			}
		}
	}
}
