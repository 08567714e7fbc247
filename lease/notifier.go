package lease

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// notifier is a Client's one listener, shared by everything in it that wants
// to hear about some keys (river's notifier: Listen(topic, fn)): the waiting
// acquisitions of a key and the holders of one. It runs a data.Listener only
// while someone listens: started by the first subscription, stopped after
// the last, so a Client that neither holds nor waits has no listener
// connection. In poll mode (a pooler without a listen DSN, a standby,
// Config.Listener.Poll) the listener reads lease.event instead, and the
// subscriptions hear the rows it reads the same way.
//
// Only waiters need the listener's catch-up (a read of lease.event every
// Config.Listener.CatchUp, for the notification a dead notifier never
// sent): a waiter that misses a release would wait for the lease's expiry,
// while a holder that misses one still learns at its next renewal. So a
// listener runs with the catch-up only while a waiter listens; a Client
// that only holds leases pays for a LISTEN connection and its pings, not
// for a read every 300 ms. The listener restarts when the first waiter
// comes (the restart is a resync: holders renew early).
//
// What is no longer needed goes only once it has not been needed for
// listenerLinger: the listener after the last subscription, the catch-up
// after the last waiter. A program that takes turns (Queue, hold for a
// moment, release, Queue again) passes from waiter to holder to waiter
// with no subscription, or no waiter, for an instant in between: each
// change would otherwise cost a new connection (a backend's start, the
// catch-up's placing read), a resync (holders renew early, waiters try
// again) and the listener's ping, twice a turn. A new subscription within
// the linger finds the listener running and needs none of them.
//
// Anyone who may connect can NOTIFY, so nothing a notification says costs
// more than a bounded read (readback.go): the notifier reads a batch's
// notifications back in one read, only when one of them names a key it
// listens to or a truncation, and hands on the rows, never the payloads;
// the listener has already dropped those naming an event behind its
// reading position (data.Listener.Repeated). A truncation is acted on only
// once read back. Resyncs, which make every holder renew and every waiter
// try again, are handed on at most once every resyncGap (resync.go).
type notifier struct {
	store *data.Store
	cfg   data.ListenerConfig
	wg    *sync.WaitGroup // the Client's: Close waits for the listener
	gap   time.Duration   // the least time between two resyncs handed on

	mu     sync.Mutex
	closed bool
	subs   map[Key]map[*subscription]struct{}
	n      int
	stop   context.CancelFunc // stops the running listener; nil when none runs

	waiters  int  // subscriptions that need the catch-up (listen, not watch)
	catching bool // the running listener reads the catch-up

	// linger is how long the listener, or its catch-up, outlives its need
	// (listenerLinger; tests shorten or lengthen it). lingering counts the
	// lingers armed, so that a timer that fired late, after its linger was
	// disarmed or replaced, changes nothing; lingerOn says one is armed.
	linger    time.Duration
	lingering int64
	lingerOn  bool
	lingerT   *time.Timer

	// renewToCheck is set once the login was refused a read of a held
	// lease's row: holders check by renewing from then on (watch.go).
	renewToCheck atomic.Bool
	// checks counts the holder checks the database answered (watch.go).
	checks atomic.Int64
	// claims counts the asks that claimed their lease on a handed_over
	// notification (ask_claim.go).
	claims atomic.Int64
	// starts counts the listeners started (and restarted).
	starts atomic.Int64
	// reads counts the read-backs of notifications (readback.go).
	reads atomic.Int64
	// resyncsAsked counts the resyncs asked for, handed on or not (resync.go).
	resyncsAsked atomic.Int64
	// unverified is set once the login was refused a read of lease.event:
	// a notification cannot be confirmed, and counts as a resync
	// (readback.go).
	unverified atomic.Bool
}

// notice is what a subscription hears: an event naming its key, a resync
// (the listener has just started listening, reconnected, dropped events or
// seen the lease table truncated: anything may have happened to the key
// since the last notice), or the Client closing.
type notice struct {
	ev     data.Event
	resync bool
	closed bool
	hint   bool // ev is a notification's payload, not read back (a message_sent: notifier.hint)
}

// subscription is one listener of one key. fn runs on the notifier's
// goroutine with its lock held: it must not block or call the notifier
// (signal a channel). Once unsubscribe has returned fn is not called again.
type subscription struct {
	key     Key
	fn      func(notice)
	catchUp bool // a waiter's: the listener reads the catch-up while it listens
	// messages: it wants the key's message events besides message_sent
	// (WaitMessage); nobody else's make the notifier read them back.
	messages bool
}

// newNotifier returns a Client's notifier: cfg configures its listeners,
// and resyncs are handed on at most once every gap.
func newNotifier(store *data.Store, cfg data.ListenerConfig, gap time.Duration, wg *sync.WaitGroup) *notifier {
	return &notifier{store: store, cfg: cfg, gap: gap, wg: wg, subs: make(map[Key]map[*subscription]struct{}),
		linger: listenerLinger}
}

// listenerLinger is how long a Client's listener outlives its last
// subscription, and its catch-up its last waiter (see notifier): long
// enough to span a release and the next Queue, and a short hold between a
// grant and its release; short enough that a Client done waiting soon
// stops reading lease.event every Config.Listener.CatchUp (a few reads,
// against a restart's new connection, placing read and resync).
const listenerLinger = 2 * time.Second

// listen subscribes a waiter's fn to key's notices, starting the listener
// for the first subscription. It returns ErrClosed once the Client is
// closed.
func (n *notifier) listen(key Key, fn func(notice)) (*subscription, error) {
	return n.add(&subscription{key: key, fn: fn, catchUp: true})
}

// watch subscribes a holder's fn to key's notices, as listen does but
// without asking for the catch-up.
func (n *notifier) watch(key Key, fn func(notice)) (*subscription, error) {
	return n.add(&subscription{key: key, fn: fn})
}

// listenMessages is listen for a subscription that also wants the key's
// message events (delivered, carried, acked, expired), read back.
func (n *notifier) listenMessages(key Key, fn func(notice)) (*subscription, error) {
	return n.add(&subscription{key: key, fn: fn, catchUp: true, messages: true})
}

func (n *notifier) add(s *subscription) (*subscription, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	set := n.subs[s.key]
	if set == nil {
		set = make(map[*subscription]struct{})
		n.subs[s.key] = set
	}
	set[s] = struct{}{}
	n.n++
	if s.catchUp {
		n.waiters++
	}
	n.settleLocked()
	return s, nil
}

// settleLocked makes the listener what the subscriptions need: one runs
// while anything subscribes, reading the catch-up while a waiter does. A
// listener that is needed and not running starts at once, and one that
// lacks the catch-up a waiter needs restarts with it; a listener nobody
// needs any more, or whose catch-up nobody does, lingers (linger) and a
// subscription that comes meanwhile keeps it as it is. n.mu must be held.
func (n *notifier) settleLocked() {
	catchUp := n.waiters > 0
	switch {
	case n.n > 0 && (n.stop == nil || catchUp && !n.catching):
		n.disarmLocked()
		n.startLocked(catchUp)
	case n.stop != nil && (n.n == 0 || n.catching && !catchUp):
		n.armLocked()
	default:
		n.disarmLocked()
	}
}

// armLocked arms the linger, unless armed already: when it ends with
// nothing changed the listener stops, or restarts without its catch-up
// (lingered). n.mu must be held.
func (n *notifier) armLocked() {
	if n.lingerOn {
		return
	}
	n.lingering++
	n.lingerOn = true
	armed := n.lingering
	n.lingerT = time.AfterFunc(n.linger, func() { n.lingered(armed) })
}

// disarmLocked disarms the linger; n.mu must be held.
func (n *notifier) disarmLocked() {
	if !n.lingerOn {
		return
	}
	n.lingerOn = false
	n.lingering++ // a timer firing now finds its linger gone
	n.lingerT.Stop()
}

// lingered ends the linger armed as number armed, if it is still the armed
// one: the listener nobody needs stops, and one whose catch-up no waiter
// needs restarts without it.
func (n *notifier) lingered(armed int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || !n.lingerOn || n.lingering != armed {
		return
	}
	n.lingerOn = false
	switch {
	case n.stop == nil:
	case n.n == 0:
		n.stop()
		n.stop = nil
	case n.catching && n.waiters == 0:
		n.startLocked(false)
	}
}

// startLocked runs a listener, reading the catch-up or not, stopping the
// one that runs; n.mu must be held.
func (n *notifier) startLocked(catchUp bool) {
	if n.stop != nil {
		n.stop()
	}
	cfg := n.cfg
	if !catchUp {
		cfg.CatchUp = -1
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.stop, n.catching = cancel, catchUp
	n.starts.Add(1)
	n.wg.Go(func() { n.run(ctx, cfg) })
}

// unsubscribe removes s; the listener stops after the last subscription,
// and drops its catch-up after the last waiter, once each has lingered
// (settleLocked). It is idempotent.
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
	if s.catchUp {
		n.waiters--
	}
	n.settleLocked()
}

// close stops the listener and tells every subscription the Client closed;
// later listens return ErrClosed.
func (n *notifier) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	n.disarmLocked()
	if n.stop != nil {
		n.stop()
		n.stop = nil
	}
	n.broadcastLocked(notice{closed: true})
}

// run runs one data.Listener until ctx is cancelled and hands what it
// delivers to the subscriptions of the keys it names: rows of lease.event,
// notifications once read back (data.Listener.Serve, with a listenerRun as
// the handler).
func (n *notifier) run(ctx context.Context, cfg data.ListenerConfig) {
	ln := n.store.NewListener(cfg)
	r := &listenerRun{n: n, ln: ln, owed: newResyncs(n.gap)}
	defer r.owed.stop()
	_ = ln.Serve(ctx, r) // returns once ctx is cancelled; the listener reconnects on its own
}

// listenerRun is the notifier's handler of one listener's deliveries, and
// of the resyncs it owes (Timer: resync.go).
type listenerRun struct {
	n    *notifier
	ln   *data.Listener
	owed *resyncs
}

// HandleDelivery hands a delivery's events to the subscriptions, and a
// resync (a marker, a truncation, a read-back that failed) to all of them.
func (r *listenerRun) HandleDelivery(ctx context.Context, d data.Delivery) {
	evs, again := d.Events, d.Resync
	if d.Origin == data.FromNotify && !d.Resync {
		r.n.hint(evs)
		evs, again = r.n.readBack(ctx, r.ln, evs)
	}
	if r.n.deliver(evs) || again { // each event only wakes, or makes a holder check
		r.n.resync(r.owed)
	}
}

// Timer fires when an owed resync may be handed on.
func (r *listenerRun) Timer() <-chan time.Time { return r.owed.due() }

// HandleTimer hands on the owed resync.
func (r *listenerRun) HandleTimer(context.Context) { r.n.resyncOwed(r.owed) }

// deliver hands each event to its key's subscriptions. It reports whether
// one was a truncation, which names no key and ends every lease: it
// reaches them all as a resync.
func (n *notifier) deliver(evs []data.Event) (truncated bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ev := range evs {
		if ev.Kind == data.KindTruncated {
			truncated = true
			continue
		}
		for s := range n.subs[ev.Key] {
			s.fn(notice{ev: ev})
		}
		if ev.Key.Session != "" {
			// A waiter for its account's slots (subscribeAccount).
			for s := range n.subs[Key{Account: ev.Key.Account}] {
				s.fn(notice{ev: ev})
			}
		}
	}
	return truncated
}

// hint hands the message_sent notifications of evs to their keys'
// subscriptions as they are, without reading them back: a message_sent is
// only ever a hint to read the inbox (the holder's receive reads the truth,
// a forged one costs one receive, as a read-back would), and reading it back
// first would cost the message its delivery's latency.
func (n *notifier) hint(evs []data.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ev := range evs {
		if ev.Kind != data.KindMessageSent {
			continue
		}
		for s := range n.subs[ev.Key] {
			s.fn(notice{ev: ev, hint: true})
		}
	}
}

// broadcastLocked hands no to every subscription; n.mu must be held.
func (n *notifier) broadcastLocked(no notice) {
	for _, set := range n.subs {
		for s := range set {
			s.fn(no)
		}
	}
}
