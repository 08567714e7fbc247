package lease

import "time"

// resyncGap is the least time between two resyncs a Client's notifier hands
// to its subscriptions: half the renew interval. A resync makes every held
// lease renew early (in one batch) and every waiter try again. The
// listener asks for one after every (re)connection, and whenever it drops
// notifications its consumer had no room for, which anyone who may connect
// can cause by flooding the channel; a truncation read back asks for one
// too. So whatever is asked, a held lease renews early at most once every
// half interval: at most twice the heartbeat's rate. A resync asked for
// within the gap is handed on when it ends, once for all asked meanwhile;
// the first of each listener goes at once.
func resyncGap(cfg Config) time.Duration { return cfg.RenewInterval / 2 }

// resyncs rate-limits the resyncs one listener's run hands on.
type resyncs struct {
	gap   time.Duration
	last  time.Time // when the last one was handed on; zero: none yet
	timer *time.Timer
	armed bool // a resync is owed: timer fires when it may go
}

func newResyncs(gap time.Duration) *resyncs {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &resyncs{gap: gap, timer: t}
}

// due fires when an owed resync may be handed on (call fired then).
func (r *resyncs) due() <-chan time.Time { return r.timer.C }

func (r *resyncs) stop() { r.timer.Stop() }

// ask reports whether a resync may be handed on at now. When it may not, it
// owes one: due fires once the gap has passed.
func (r *resyncs) ask(now time.Time) bool {
	if wait := r.gap - now.Sub(r.last); !r.last.IsZero() && wait > 0 {
		if !r.armed {
			r.timer.Reset(wait)
			r.armed = true
		}
		return false
	}
	if r.armed { // the owed one goes now
		r.timer.Stop()
		r.armed = false
	}
	r.last = now
	return true
}

// fired records that due fired: the owed resync goes at now.
func (r *resyncs) fired(now time.Time) {
	r.armed = false
	r.last = now
}

// resync hands a resync to every subscription when r allows it now, and
// otherwise leaves it owed.
func (n *notifier) resync(r *resyncs) {
	n.resyncsAsked.Add(1)
	if r.ask(time.Now()) {
		n.broadcast(notice{resync: true})
	}
}

// resyncOwed hands on the resync r owed.
func (n *notifier) resyncOwed(r *resyncs) {
	r.fired(time.Now())
	n.broadcast(notice{resync: true})
}

func (n *notifier) broadcast(no notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.broadcastLocked(no)
}
