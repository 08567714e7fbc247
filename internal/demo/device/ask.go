package device

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/leasetop/leasetop/lease"
)

// askTimeout is how long an ask to hand over stays pending: long enough
// for a holder to finish its current chunk (TTL/5) and hand over.
func (t timing) askTimeout() time.Duration { return t.chunk * 3 }

// ask is "continue on this device": the device asks the holder to hand the
// conversation over (lease.Client.Ask); the holder finishes its current
// step and hands over in one transaction. When the ask expires unanswered
// (a frozen holder) or is declined (a paying run), the user falls back:
// queue, else preempt, else gives up. The fallback is the device's own
// (Ask's then is refuse), so that the device says which ran.
func (d *deviceProcess) ask(ctx context.Context, permit lease.Permit, held *lease.HeldError, p press, rng *rand.Rand) {
	key := permit.Request().Key
	d.out.report(Report{Kind: ReportAsking, Session: key.Session, Holder: held.Holder, OwnerRun: held.RunID, Remaining: d.timing.askTimeout()})
	start := time.Now()
	l, err := d.client.Ask(ctx, permit, d.timing.askTimeout(), lease.BusyRefuse)
	waited := time.Since(start)
	var askErr *lease.AskError
	switch {
	case err == nil:
		by := ""
		if d.handedOver(ctx, l) {
			by = held.Holder
		}
		d.out.report(Report{Kind: ReportAskEnded, Session: key.Session, Holder: held.Holder, How: EndHandedOver, Waited: waited})
		d.execute(ctx, l, rng, runStart{waited: waited, handedBy: by, paying: p.paying})
		return
	case ctx.Err() != nil:
		return
	case errors.As(err, &askErr):
		how := "expired"
		switch {
		case errors.Is(err, lease.ErrAskDeclined):
			how = "declined"
		case errors.Is(err, lease.ErrAskBusy):
			how = "busy"
		case errors.Is(err, lease.ErrNotPreemptible):
			how = "not preemptible"
		case errors.Is(err, lease.ErrAskQueued):
			how = "queued ahead"
		}
		then := d.fallback()
		d.out.report(Report{Kind: ReportAskEnded, Session: key.Session, Holder: held.Holder, How: how, Waited: waited, Strategy: then})
		why := "ask " + how
		now := held
		if askErr.Held != nil {
			now = askErr.Held
		}
		switch then {
		case lease.BusyQueue:
			d.queue(ctx, permit, now, why, p, rng)
		case lease.BusyPreempt:
			d.preempt(ctx, permit, now, why, p, rng)
		default:
			d.out.report(Report{Kind: ReportRefused, Session: key.Session, Holder: now.Holder, OwnerRun: now.RunID, Fence: now.Fence,
				Remaining: now.Remaining, Cause: why})
		}
	default:
		d.fail(key.Session, err)
	}
}

// fallback is what an ask that did not get the conversation falls back to:
// queue if the mix queues, else preempt if it preempts, else nothing.
func (d *deviceProcess) fallback() lease.OnBusy {
	switch {
	case d.cfg.Mix.Has(lease.BusyQueue):
		return lease.BusyQueue
	case d.cfg.Mix.Has(lease.BusyPreempt):
		return lease.BusyPreempt
	}
	return lease.BusyRefuse
}

// handedOver reports whether l's run got its lease by a hand-over (the
// history's handed_over event names it), rather than because the session
// was freed while the ask was pending.
func (d *deviceProcess) handedOver(ctx context.Context, l *lease.Lease) bool {
	tok := l.Token()
	var yes bool
	err := d.store.Pinned().QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM lease.event
		                WHERE account_id = $1 AND session_id = $2 AND run_id = $3 AND kind = 'handed_over')`,
		tok.Key.Account, tok.Key.Session, tok.PublicRunID()).Scan(&yes)
	return err == nil && yes
}

// answerAsk is the holder's side: it hands the run over to the asker
// (after the chunk it was producing has been written), or, when the run is
// paying, declines. It reports whether the run was handed over.
func (d *deviceProcess) answerAsk(ctx context.Context, l *lease.Lease, a lease.IncomingAsk, paying bool) bool {
	tok := l.Token()
	if paying {
		err := a.Decline(ctx)
		d.out.report(Report{Kind: ReportAnswered, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence, Holder: a.Holder,
			How: "declined", Err: errText(err)})
		return false
	}
	err := l.HandOver(ctx)
	if err != nil {
		d.out.report(Report{Kind: ReportAnswered, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence, Holder: a.Holder,
			How: "expired", Err: errText(err)})
		return false
	}
	d.out.report(Report{Kind: ReportEnded, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence, How: EndHandedOver,
		Holder: a.Holder, Cause: "handed over to " + a.Holder})
	return true
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
