package lease

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// AskOptions say how Client.AskWith asks and what it does when the holder
// does not hand over.
type AskOptions struct {
	// Timeout is how long the ask stays pending on the database clock:
	// more than 0, at most data.MaxAskTTL.
	Timeout time.Duration
	// Then is the fallback when the ask ends without the lease:
	// BusyRefuse (the zero value), BusyQueue or BusyPreempt.
	Then OnBusy
	// Reason is what a BusyPreempt fallback records in its preempted event (at most
	// data.MaxReasonBytes, the rules of holder labels); "" records why the
	// ask failed ("asked to hand over; declined", ...).
	Reason string
}

// Ask is AskWith with a timeout and a fallback, and the default reason.
func (c *Client) Ask(ctx context.Context, p Permit, timeout time.Duration, then OnBusy) (*Lease, error) {
	return c.AskWith(ctx, p, AskOptions{Timeout: timeout, Then: then})
}

// AskWith acquires p's lease for a fresh run id, asking its holder to hand
// it over when the session is busy ("continue on this device"). It records
// one ask, pending for o.Timeout on the database clock, with what p's
// request declares (Request.NotPreemptible, Attachment: the lease handed
// over carries them, not the old holder's), which the holder's Lease.Asked
// delivers; when the holder hands over (Lease.HandOver), the lease moves to
// this run in one transaction with a higher fence, and AskWith returns it
// held. A free session is acquired as Try does, and one freed while the ask
// is pending too.
//
// The ask ends without the lease, with an *AskError (errors.Is(err,
// ErrHeld) as well), when another run's ask is pending (ErrAskBusy, naming
// it and its deadline), when the holder declared itself not preemptible
// (ErrNotPreemptible: such a holder may not be asked either; nothing is
// written), when the session's queue has runs ahead of this one
// (ErrAskQueued: an ask may not jump the queue; nothing is written), when
// the holder declines (ErrAskDeclined) and when the deadline passes
// unanswered (ErrAskExpired). Then o.Then decides: BusyRefuse returns the
// *AskError, BusyQueue queues (Client.Queue) and BusyPreempt preempts the
// holder (Client.Preempt; lease_preempt), returning what those return.
// The fallback uses the ask's run id when it can, so the history links the
// ask with the ticket or the preempt (the same run_id).
//
// The handover_asked, handed_over and handover_declined notifications wake
// it at once (the Client's shared listener); without them it looks again
// every PollInterval. When ctx ends first it returns context.Cause(ctx) and
// holds nothing: a lease handed over meanwhile is released.
func (c *Client) AskWith(ctx context.Context, p Permit, o AskOptions) (*Lease, error) {
	if err := c.check(p); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 || o.Timeout > data.MaxAskTTL {
		return nil, &data.InputError{Field: "ask timeout", Problem: fmt.Sprintf("must be more than 0 and at most %s, got %s", data.MaxAskTTL, o.Timeout)}
	}
	if !o.Then.AskFallback() {
		return nil, &data.InputError{Field: "then", Problem: "must be refuse, queue or preempt"}
	}
	if err := data.ValidateReason(o.Reason); err != nil {
		return nil, err
	}
	tr := &tracker{runID: uuid.New()}
	w, err := c.watchAsk(p.req.Key, data.PublicRunID(tr.runID))
	if err != nil {
		return nil, err
	}
	defer c.notes.unsubscribe(w.sub)
	a := &asking{c: c, p: p, tr: tr, timeout: o.Timeout, wake: w.wake, handed: &w.handed}
	l, err := a.run(ctx)
	if err == nil {
		return l, nil
	}
	reusable := a.giveUp()
	var ae *AskError
	if !errors.As(err, &ae) || o.Then == BusyRefuse {
		return nil, err
	}
	if !reusable {
		tr = &tracker{runID: uuid.New()}
	}
	return c.askFallback(ctx, p, o, tr, ae)
}

// asksWake: the events that can end an ask or free the session.
func asksWake(k data.Kind) bool {
	switch k {
	case data.KindHandedOver, data.KindHandoverDeclined, data.KindHandoverExpired,
		data.KindReleased, data.KindForceReleased, data.KindTakenOver, data.KindPreempted:
		return true
	}
	return false
}

// asking is one Ask call.
type asking struct {
	c       *Client
	p       Permit
	tr      *tracker
	timeout time.Duration
	wake    <-chan struct{}
	handed  *atomic.Bool // a handed_over notification named this run (askerWatch)
	asked   bool         // an ask of this run may be recorded
	free    bool         // the last answer found the session free: acquire it
}

// run asks and waits until the ask ends or the lease is this run's. It asks
// first, without trying an acquire: lease.ask_handover answers free when
// nobody holds the session, and only then does it acquire (a busy session,
// Ask's case, costs one round trip less; an AskError then has no Held). Once
// an ask is recorded it only asks again (a repeat writes nothing): an
// acquire would return a handed-over lease with the expiry the holder gave
// it, which claim must not use (see claim).
func (a *asking) run(ctx context.Context) (*Lease, error) {
	c, req := a.c, a.p.req
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	var b backoff
	retry := func(err error) error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		delay, ok := c.retryDelay(err, &b)
		if !ok {
			return err
		}
		return a.sleep(ctx, timer, delay)
	}
	var held *HeldError
	for {
		if c.isClosed() {
			return nil, ErrClosed
		}
		if a.free && !a.asked {
			if l, done, err := a.acquireFree(ctx, &held, retry); done {
				return l, err
			}
		}

		if a.asked && a.handed.Swap(false) {
			// Told the lease is this run's (or a resync may have missed
			// it): claim it at once; if that fails, ask again below, whose
			// answer decides.
			if l, err := a.claimNotified(ctx); err == nil {
				return l, nil
			} else if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
		}

		sent := time.Now()
		ans, err := c.store.AskHandoverWith(ctx, req.Key, a.tr.runID, a.timeout, req.Holder, req.options())
		if err != nil {
			if !data.NotApplied(err) {
				a.asked = true // it may have been recorded
			}
			if err := retry(err); err != nil {
				return nil, err
			}
			continue
		}
		b.answer()
		if l, done, err := a.answered(ctx, ans, held, sent, timer); done {
			return l, err
		}
	}
}

// acquireFree acquires the session the last answer found free. It is done
// when it returns the lease or an error; otherwise the session is held
// again (held says by whom) or the acquire failed in a way to retry, and
// the ask goes on.
func (a *asking) acquireFree(ctx context.Context, held **HeldError, retry func(error) error) (*Lease, bool, error) {
	l, err := a.c.try(ctx, a.p.req, a.tr, a.c.acquire)
	switch {
	case err == nil:
		return l, true, nil
	case ctx.Err() != nil:
		return nil, true, context.Cause(ctx)
	case !errors.As(err, held):
		if err := retry(err); err != nil {
			return nil, true, err
		}
		return nil, false, nil
	}
	a.free = false // held again (or queued): ask
	if (*held).RunID == uuid.Nil {
		// Refused for the queue, with nobody holding: an ask would answer
		// free again at once. Wait as a waiter does (a notification, or the
		// poll) before asking again.
		if err := retry(err); err != nil {
			return nil, true, err
		}
	}
	return nil, false, nil
}

// answered acts on the answer to an ask sent at sent: it is done when the
// lease is this run's or the ask ended without it (an *AskError); it
// returns not done when the ask is pending (after waiting for its deadline,
// a notification or PollInterval) or the session is free (acquireFree).
func (a *asking) answered(ctx context.Context, ans data.AskAnswer, held *HeldError, sent time.Time, timer *time.Timer) (*Lease, bool, error) {
	key := a.p.req.Key
	switch ans.Outcome {
	case data.AskAsked, data.AskPending:
		a.asked = true
		// Look again when the deadline passes on the database clock
		// (counted from the send time: never later), on a notification,
		// or after PollInterval.
		if err := a.sleep(ctx, timer, min(time.Until(sent.Add(ans.Ask.Remaining)), jitter(a.c.cfg.PollInterval))); err != nil {
			return nil, true, err
		}
		return nil, false, nil
	case data.AskHandedOver, data.AskHeld:
		a.asked = true
		l, err := a.claim(ctx, ans.Fence)
		if errors.Is(err, data.ErrNotHeld) { // it expired before this run could claim it
			a.asked = false
			return nil, true, &AskError{Key: key, Reason: ErrAskExpired, Ask: ans.Ask, Held: held}
		}
		return l, true, err
	case data.AskFree:
		a.asked, a.free = false, true // nothing pending: acquire it
		return nil, false, nil
	case data.AskBusy:
		return nil, true, &AskError{Key: key, Reason: ErrAskBusy, Ask: ans.Ask, Held: held}
	case data.AskNotPreemptible:
		return nil, true, &AskError{Key: key, Reason: ErrNotPreemptible, Held: held}
	case data.AskQueued:
		a.asked = false
		return nil, true, &AskError{Key: key, Reason: ErrAskQueued, Ahead: ans.Ahead, Held: held}
	case data.AskDeclined:
		a.asked = false
		return nil, true, &AskError{Key: key, Reason: ErrAskDeclined, Ask: ans.Ask, Held: held}
	case data.AskExpired:
		a.asked = false
		return nil, true, &AskError{Key: key, Reason: ErrAskExpired, Ask: ans.Ask, Held: held}
	}
	return nil, true, fmt.Errorf("ask %q: unexpected answer %q", key.String(), ans.Outcome)
}

// sleep waits d, or less when woken; it returns ctx's cause when ctx ends.
func (a *asking) sleep(ctx context.Context, timer *time.Timer, d time.Duration) error {
	timer.Reset(max(d, 0))
	select {
	case <-ctx.Done():
		timer.Stop()
		return context.Cause(ctx)
	case <-a.wake:
		timer.Stop()
	case <-timer.C:
	}
	return nil
}

// claim takes the lease the holder handed to this run with fence (read
// from the ask's answer). It renews it rather than acquiring it:
// lease.acquire returns a run's own unexpired lease unchanged, with the
// expiry lease.hand_over gave it when the holder let go, so a local
// deadline counted from the acquire's send time could outlast it. A
// renewal sent at sent makes the row outlast sent + TTL, and the lease's
// deadline counts from there (claimBy).
func (a *asking) claim(ctx context.Context, fence int64) (*Lease, error) {
	c, key, run := a.c, a.p.req.Key, a.tr.runID
	return a.claimBy(ctx, func(ctx context.Context) (data.Grant, error) {
		exp, err := c.store.Renew(ctx, key, run, c.cfg.TTL)
		return data.Grant{RunID: run, Fence: fence, ExpiresAt: exp}, err
	})
}

// giveUp cleans up after an Ask that holds nothing: a grant whose reply was
// lost is released, and an ask that may still be pending is withdrawn (a
// lease the holder handed over meanwhile is released: lease.release deletes
// only this run's own row). It reports whether the run id is free for a
// fallback: false when a release of it was left running in the background.
func (a *asking) giveUp() bool {
	c, key, run := a.c, a.p.req.Key, a.tr.runID
	if a.asked {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReleaseTimeout)
		ans, err := c.store.WithdrawHandover(ctx, key, run)
		cancel()
		if err != nil || ans.Outcome == data.AskHandedOver {
			c.cleanup(key, run, time.Now().Add(c.cfg.TTL-c.cfg.SafetyMargin))
			return false
		}
	}
	if a.tr.maybeGranted() {
		c.cleanup(key, run, a.tr.lastSent.Add(c.cfg.TTL-c.cfg.SafetyMargin))
		return false
	}
	return true
}

// askFallbackReasons are what a BusyPreempt fallback records in its preempted event
// when AskOptions.Reason is empty, by how the ask ended.
var askFallbackReasons = map[error]string{
	ErrAskExpired:  "asked to hand over; no answer in time",
	ErrAskDeclined: "asked to hand over; declined",
	ErrAskBusy:     "asked to hand over; another run's ask was pending",
	ErrAskQueued:   "asked to hand over; runs were queued ahead",
}

// askFallback runs what an ask chose to do when it ended without the lease
// (ae says how), with tr's run id: BusyQueue joins the session's queue
// (Client.Queue), BusyPreempt preempts the holder (Client.Preempt, with
// o.Reason or askFallbackReasons). Their errors are returned as those calls
// return them, after the words of how the ask ended (not wrapped: the
// error is the fallback's).
func (c *Client) askFallback(ctx context.Context, p Permit, o AskOptions, tr *tracker, ae *AskError) (*Lease, error) {
	var (
		l   *Lease
		err error
	)
	switch o.Then {
	case BusyQueue:
		l, err = c.queue(ctx, p, tr)
	case BusyPreempt:
		reason := cmp.Or(o.Reason, askFallbackReasons[ae.Reason], askFallbackReasons[ErrAskExpired])
		l, err = c.preempt(ctx, p, reason, tr)
	default:
		return nil, ae
	}
	if err != nil {
		return nil, fmt.Errorf("%v; then %s: %w", ae, o.Then, err)
	}
	return l, nil
}
