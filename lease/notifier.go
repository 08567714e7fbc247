package lease

import (
	"context"
	"sync"

	"github.com/leasetop/leasetop/data"
)

// notifier is a Client's one listener, shared by everything in it that wants
// to hear about some keys (river's notifier: Listen(topic, fn)): the waiting
// acquisitions of a key and the holders of one. It runs a data.Listener only
// while someone listens: started by the first subscription, stopped after
// the last, so a Client that neither holds nor waits has no listener
// connection. In poll mode (a pooler without a listen DSN, a standby,
// Config.Listener.Poll) the listener reads lease.event instead, and the
// subscriptions hear the rows it reads the same way.
type notifier struct {
	store *data.Store
	cfg   data.ListenerConfig
	wg    *sync.WaitGroup // the Client's: Close waits for the listener

	mu     sync.Mutex
	closed bool
	subs   map[Key]map[*subscription]struct{}
	n      int
	stop   context.CancelFunc // stops the running listener; nil when none runs
}

// notice is what a subscription hears: an event naming its key, a resync
// (the listener has just started listening, reconnected, dropped events or
// seen the lease table truncated: anything may have happened to the key
// since the last notice), or the Client closing.
type notice struct {
	ev     data.Event
	resync bool
	closed bool
}

// subscription is one listener of one key. fn runs on the notifier's
// goroutine with its lock held: it must not block or call the notifier
// (signal a channel). Once unsubscribe has returned fn is not called again.
type subscription struct {
	key Key
	fn  func(notice)
}

func newNotifier(store *data.Store, cfg data.ListenerConfig, wg *sync.WaitGroup) *notifier {
	return &notifier{store: store, cfg: cfg, wg: wg, subs: make(map[Key]map[*subscription]struct{})}
}

// listen subscribes fn to key's notices, starting the listener for the first
// subscription. It returns ErrClosed once the Client is closed.
func (n *notifier) listen(key Key, fn func(notice)) (*subscription, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	s := &subscription{key: key, fn: fn}
	set := n.subs[key]
	if set == nil {
		set = make(map[*subscription]struct{})
		n.subs[key] = set
	}
	set[s] = struct{}{}
	n.n++
	if n.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		n.stop = cancel
		n.wg.Go(func() { n.run(ctx) })
	}
	return s, nil
}

// unsubscribe removes s, stopping the listener after the last subscription.
// It is idempotent.
func (n *notifier) unsubscribe(s *subscription) {
	n.mu.Lock()
	defer n.mu.Unlock()
	set := n.subs[s.key]
	if _, ok := set[s]; !ok {
		return
	}
	delete(set, s)
	if len(set) == 0 {
		delete(n.subs, s.key)
	}
	n.n--
	if n.n == 0 && n.stop != nil {
		n.stop()
		n.stop = nil
	}
}

// close stops the listener and tells every subscription the Client closed;
// later listens return ErrClosed.
func (n *notifier) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	if n.stop != nil {
		n.stop()
		n.stop = nil
	}
	n.broadcastLocked(notice{closed: true})
}

// run runs one data.Listener until ctx is cancelled and hands what it
// delivers to the subscriptions of the keys it names.
func (n *notifier) run(ctx context.Context) {
	ln := n.store.NewListener(n.cfg)
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
		case b := <-ln.Batches():
			if b.Resync {
				n.broadcast(notice{resync: true})
			}
			n.deliver(b.Events) // whatever their source: each only wakes, or makes a holder check
		}
	}
}

// deliver hands each event to its key's subscriptions; a truncation names
// no key and ends every lease: it reaches them all as a resync.
func (n *notifier) deliver(evs []data.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ev := range evs {
		if ev.Kind == data.KindTruncated {
			n.broadcastLocked(notice{resync: true})
			continue
		}
		for s := range n.subs[ev.Key] {
			s.fn(notice{ev: ev})
		}
	}
}

func (n *notifier) broadcast(no notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.broadcastLocked(no)
}

// broadcastLocked hands no to every subscription; n.mu must be held.
func (n *notifier) broadcastLocked(no notice) {
	for _, set := range n.subs {
		for s := range set {
			s.fn(no)
		}
	}
}
