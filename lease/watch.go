package lease

import (
	"context"
	"errors"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// The holder watch: a held lease listens to its own key on the Client's
// notifier (the waiters' listener, run while anything is held or waited
// for), and an event naming the key that does not name this run as its
// holder (a forced release; a takeover, a release or a rejected renewal of
// another run; any kind to come that names another run) makes it
// check the lease against the database at once, instead of at the next
// renewal, TTL/3 away: a lease lost to an operator or another run is lost
// (Context cancelled with ErrForceReleased, ErrTakenOver...) within one
// round trip of the notification, or of the poll that read the event in
// poll mode.
//
// A notification is never proof of loss: anyone who may connect can NOTIFY
// on the channel. It only triggers the check, a read of the lease's row on
// the heartbeat's goroutine (data.Store.CheckHolder: does the row still name
// this run's public id with its fence? and if not, which event ended it),
// which writes nothing: a lease that has lost its row to a preempt or a
// forced release stops without a renewal, so the history gets no
// renew_rejected "zombie" line for it. Still named, the lease stays held and
// the heartbeat goes on unchanged (the read extends nothing); no longer
// named, it is lost at once, with the cause the history gives. A login that
// may not read the lease tables (no lease_reader) checks by a renewal sent
// on its own instead, as before: granted, a later deadline; refused, lost
// as a refused heartbeat loses it. A flood of forged notifications costs
// one check in flight per lease at a time (checks coalesce) and at least
// checkGap between two, or resyncGap between two checks by renewal. A
// notification reaches the watch only once the Client's notifier has read
// its row back (readback.go), so a forged one costs one read a batch and
// no check. A resync of the
// listener (it has just started listening, or reconnected, or dropped
// notifications: something may have been missed) pulls every held lease
// into the next renewal batch, so an event between the grant and the
// listener's start is not missed either.
// A check that fails for another reason (the database did not answer)
// changes nothing: the heartbeat goes on as before. A lease that watches
// its asks reads the pending ask in the same round trip, so an ask's
// notification delivers the ask (Lease.Asked) at once.

// checkGap is the least time between two checks of one lease.
const checkGap = 10 * time.Millisecond

// gapBetweenChecks is the least time between two checks of l: checkGap
// for a read of its row, and for a login that checks by renewing, the gap
// between two early renewals (resyncGap).
func (l *Lease) gapBetweenChecks() time.Duration {
	if l.client.notes.renewToCheck.Load() {
		return resyncGap(l.cfg)
	}
	return checkGap
}

// watch subscribes l to its key's notices. Without a subscription (the
// Client is closed) the lease is kept by its heartbeat alone.
func (l *Lease) watch() {
	sub, err := l.client.notes.watch(l.token.Key, l.onNotice)
	if err == nil {
		l.sub = sub
	}
}

// unwatch ends l's subscription: the notifier stops its listener when
// nothing else is held or waited for.
func (l *Lease) unwatch() {
	if l.sub != nil {
		l.client.notes.unsubscribe(l.sub)
	}
}

// onNotice runs on the notifier's goroutine: it only signals the heartbeat.
func (l *Lease) onNotice(n notice) {
	switch {
	case n.closed:
	case n.resync:
		signal(l.early)
		l.wakeInbox()
	case n.ev.Kind == data.KindMessageSent:
		l.wakeInbox() // a message for whoever holds the key: read it (inbox.go)
	case l.concerns(n.ev):
		signal(l.check)
	}
}

// concerns reports whether ev (which names l's key) may mean that l is no
// longer held: anything that names another run as the key's holder (a
// takeover, a preemption or a hand-over to it, a release or a rejected
// renewal of another run, whatever its kind) or ends this run's row (a
// forced release). Events that name this run as the holder (its acquire or
// takeover, its renewals, its own rejected renewal, which its heartbeat has
// seen already) do not.
//
// The hand-over's kinds name the asker as run_id: an ask (handover_asked)
// concerns a lease that watches its asks (Lease.Asked), whose check reads
// the ask in the renewal's round trip (renewer.renewOne) and delivers it at
// once; a declined or expired ask never ends a lease; handed_over is an
// ownership change like a takeover. An event with a fence below this run's
// happened before it was granted the lease, and concerns it in no way: a
// row read back that someone sent again.
func (l *Lease) concerns(ev data.Event) bool {
	if ev.Fence > 0 && ev.Fence < l.token.Fence {
		return false // from before this run's grant (fences only grow): it cannot end it
	}
	if ev.Kind.Message() {
		return false // the inbox's messages move no lease (sql/inbox.sql)
	}
	switch ev.Kind {
	case data.KindQueueJoined, data.KindQueueLeft:
		return false // the queue's tickets never end a lease (sql/queue.sql)
	case data.KindHandoverDeclined, data.KindHandoverExpired:
		return false // the ask's end; the lease stays where it was (sql/handover.sql)
	case data.KindHandoverAsked:
		return l.asks.watching.Load()
	}
	return ev.RunID != l.RunID() || ev.Kind.Ends()
}

// checkNow checks l against its row at once, and reports whether the
// heartbeat goes on. It runs on the heartbeat's goroutine, so it never
// overlaps a renewal of the heartbeat's own. The call is bounded by the
// local deadline, not by the lease's context: Release waits for it, so that
// its delete never reaches the server before this check.
func (l *Lease) checkNow() bool {
	l.renewMu.Lock() // as every renewal: never while HandOver moves the lease (asked.go)
	defer l.renewMu.Unlock()
	l.mu.Lock()
	deadline, final := l.state.Deadline, l.finalLocked()
	l.mu.Unlock()
	if final || l.keepCtx.Err() != nil {
		return false
	}
	sent := time.Now()
	if !sent.Before(deadline) {
		l.onDeadline()
		return false
	}
	until := deadline
	if t := sent.Add(l.cfg.RenewTimeout); t.Before(until) {
		until = t
	}
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	if err := lateCall(until, "check "+l.token.Key.String()); err != nil {
		return true // not answered: the heartbeat's own renewals decide
	}
	if l.client.notes.renewToCheck.Load() {
		return l.renewCheck(ctx, sent)
	}
	c, err := l.client.store.CheckHolder(ctx, l.token.Key, l.RunID(), l.token.Fence)
	switch {
	case errors.Is(err, data.ErrPermission) || errors.Is(err, data.ErrSchema):
		l.client.notes.renewToCheck.Store(true) // this login may not read the row: check by renewing
		return l.renewCheck(ctx, sent)
	case l.keepCtx.Err() != nil:
		return false
	case err != nil:
		return true // not answered: the heartbeat's own renewals decide
	}
	l.client.notes.checks.Add(1)
	if !c.Held {
		l.lostTo(c.Ending)
		return false
	}
	if l.asks.watching.Load() {
		l.noteAsk(c.Ask)
	}
	return true
}

// renewCheck is the check of a login that may not read the lease's row: a
// renewal sent on its own (with the pending ask, when l watches its asks).
func (l *Lease) renewCheck(ctx context.Context, sent time.Time) bool {
	exp, err := l.client.renewer.renewOne(ctx, l)
	recv := time.Now()
	if err == nil || errors.Is(err, data.ErrNotHeld) {
		l.client.notes.checks.Add(1)
	}
	switch {
	case err == nil:
		l.cfg.Metrics.observeRenew(recv.Sub(sent), nil)
		_, ok := l.confirmed(sent, recv, exp)
		return ok
	case l.keepCtx.Err() != nil:
		return false
	case errors.Is(err, data.ErrNotHeld):
		l.cfg.Metrics.observeRenew(recv.Sub(sent), ErrRejected)
		l.rejected()
		return false
	}
	return true // not answered: the heartbeat's own renewals decide
}
