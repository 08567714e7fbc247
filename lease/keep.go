package lease

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// keep is the heartbeat: it renews at RenewInterval from the send time of the
// last confirmed renewal, retries sooner while renewals fail, and ends when
// the lease is released or lost.
//
// The Client's renewer sends the renewals of its leases that fall due
// together in one batch, and may ask this lease to renew a little early
// (l.early) to share a batch with others.
func (l *Lease) keep(sent time.Time) {
	defer close(l.done)
	defer l.unwatch()
	r := l.client.renewer
	r.join(l)
	defer r.leave(l)
	next := time.Until(sent.Add(l.cfg.RenewInterval))
	l.due.Store(time.Now().Add(next).UnixNano())
	t := time.NewTimer(next)
	defer t.Stop()
	var (
		lastCheck time.Time
		checkLate <-chan time.Time // a check asked for within checkGap of the last one
	)
	for {
		select {
		case <-l.keepCtx.Done():
			return
		case <-t.C:
		case <-l.early:
		case <-l.check: // the holder watch (watch.go)
			if wait := l.gapBetweenChecks() - time.Since(lastCheck); wait > 0 {
				if checkLate == nil {
					checkLate = time.After(wait)
				}
				continue
			}
			lastCheck = time.Now()
			if !l.checkNow() {
				return
			}
			continue
		case <-checkLate:
			checkLate, lastCheck = nil, time.Now()
			if !l.checkNow() {
				return
			}
			continue
		}
		l.due.Store(math.MaxInt64) // renewing: not to be pulled into a batch
		next, ok := l.renew()
		if !ok {
			return
		}
		select {
		case <-l.early: // a pull that came while this renewal was under way
		default:
		}
		l.due.Store(time.Now().Add(next).UnixNano())
		t.Reset(next)
		l.wakeInbox() // the inbox's fallback read: a message_sent notification may have been lost

	}
}

// renew makes one renewal attempt and returns how long to wait before the
// next one, or false when the heartbeat must end.
func (l *Lease) renew() (time.Duration, bool) {
	l.renewMu.Lock() // never while HandOver moves the lease (handover.go)
	defer l.renewMu.Unlock()
	l.mu.Lock()
	deadline, final := l.state.Deadline, l.finalLocked()
	l.mu.Unlock()
	if final {
		return 0, false
	}
	sent := time.Now()
	if !sent.Before(deadline) {
		l.onDeadline()
		return 0, false
	}
	until := deadline
	if t := sent.Add(l.cfg.RenewTimeout); t.Before(until) {
		until = t
	}
	rctx, cancel := context.WithDeadline(l.keepCtx, until)
	batchSent, exp, err := l.client.renewer.renew(rctx, l)
	cancel()
	if !batchSent.IsZero() {
		sent = batchSent // the deadline counts from the statement's send time, never earlier than sent
	}
	recv := time.Now()
	switch {
	case err == nil:
		l.cfg.Metrics.observeRenew(recv.Sub(sent), nil)
		return l.confirmed(sent, recv, exp)
	case l.keepCtx.Err() != nil:
		return 0, false // released or lost meanwhile
	case errors.Is(err, data.ErrNotHeld):
		l.cfg.Metrics.observeRenew(recv.Sub(sent), ErrRejected)
		l.rejected()
		return 0, false
	default:
		l.cfg.Metrics.observeRenew(recv.Sub(sent), err)
		return l.atRisk(err, deadline), true
	}
}

// confirmed records a successful renewal sent at sent: the local deadline
// moves to sent + TTL - margin.
func (l *Lease) confirmed(sent, recv, expiresAt time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finalLocked() {
		return 0, false // never revive
	}
	deadline := sent.Add(l.cfg.TTL - l.cfg.SafetyMargin)
	if !recv.Before(deadline) {
		l.setLocked(Lost, l.lostError(ErrExpired, data.Event{}, l.lastErr))
		return 0, false
	}
	l.state.Deadline, l.state.ExpiresAt = deadline, expiresAt
	l.watchdog.Reset(time.Until(deadline))
	l.lastErr = nil
	l.setLocked(Held, nil) // signals Changed, also when it was already held
	return max(time.Until(sent.Add(l.cfg.RenewInterval)), 0), true
}

// atRisk records a failed renewal and returns the retry delay: a quarter of
// the renew interval (10 ms to 1 s) with jitter, cut at the deadline.
func (l *Lease) atRisk(err error, deadline time.Time) time.Duration {
	l.mu.Lock()
	l.lastErr = err
	l.setLocked(AtRisk, err)
	l.mu.Unlock()
	d := min(max(l.cfg.RenewInterval/4, 10*time.Millisecond), time.Second)
	d = d*4/5 + rand.N(d*2/5+1)
	return min(d, max(time.Until(deadline), 0))
}

// onDeadline is the watchdog: the lease is lost when the local deadline has
// passed without a confirmed renewal, whatever the heartbeat is doing (a
// renewal may be stuck in a blackholed connection).
func (l *Lease) onDeadline() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finalLocked() {
		return
	}
	if left := time.Until(l.state.Deadline); left > 0 {
		l.watchdog.Reset(left)
		return
	}
	l.setLocked(Lost, l.lostError(ErrExpired, data.Event{}, l.lastErr))
}

// rejected records a renewal the database refused, naming the event that
// ended the lease when it can be read quickly.
func (l *Lease) rejected() { l.lostTo(l.endingEvent()) }

// lostTo records the lease as lost to by, the event that ended it (zero
// when that could not be told).
func (l *Lease) lostTo(by data.Event) {
	reason := ErrRejected
	switch by.Kind {
	case data.KindForceReleased:
		reason = ErrForceReleased
	case data.KindTakenOver:
		reason = ErrTakenOver
	case data.KindPreempted:
		reason = ErrPreempted
	case data.KindHandedOver: // HandOver's reply was lost
		reason = ErrHandedOver
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(Lost, l.lostError(reason, by, nil))
}

// endingEvent reads the event that ended this run's lease: a forced release
// of this run, or a takeover, preempt or hand-over from it. It is best effort, bounded by a short
// timeout, and returns the zero Event when it cannot tell.
func (l *Lease) endingEvent() data.Event {
	ctx, cancel := context.WithTimeout(l.keepCtx, min(l.cfg.RenewTimeout, 500*time.Millisecond))
	defer cancel()
	evs, err := l.client.store.EventsFor(ctx, l.token.Key, 8)
	if err != nil {
		return data.Event{}
	}
	run := l.RunID() // the history names runs by their public ids
	for _, e := range evs {
		switch {
		case e.Kind == data.KindForceReleased && e.RunID == run,
			e.Kind == data.KindTakenOver && e.PrevRunID == run,
			e.Kind == data.KindPreempted && e.PrevRunID == run,
			e.Kind == data.KindHandedOver && e.PrevRunID == run:
			return e
		}
	}
	return data.Event{}
}

func (l *Lease) lostError(reason error, by data.Event, last error) *LostError {
	return &LostError{Key: l.token.Key, RunID: l.RunID(), Fence: l.token.Fence, Reason: reason, By: by, Last: last}
}
