package device

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// converse is one conversation open on the device: its user presses send at
// random moments until ctx ends; each press chooses a strategy from the
// device's mix (what its client does if the conversation is busy),
// authorizes, then tries once to take the conversation's lease.
func (d *deviceProcess) converse(ctx context.Context, session string, rng *rand.Rand) {
	key := lease.Key{Account: d.cfg.Account, Session: session}
	for sleep(ctx, between(rng, d.timing.thinkMin, d.timing.thinkMax)) {
		p := d.press(rng)
		permit, err := d.client.AuthorizeRequest(ctx, d.authorizer(), lease.Request{Key: key, Holder: d.holder,
			NotPreemptible: p.paying, Attachment: p.stream})
		if err != nil {
			d.fail(session, err)
			return
		}
		d.out.report(Report{Kind: ReportTrying, Session: session, Strategy: p.strategy})
		l, err := d.client.Try(ctx, permit)
		var held *lease.HeldError
		var full *lease.LimitError
		switch {
		case errors.As(err, &full):
			d.atLimit(ctx, permit, full, p, rng)
		case errors.As(err, &held):
			d.onBusy(ctx, permit, held, p, rng)
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			d.fail(session, err)
		default:
			d.execute(ctx, l, rng, runStart{paying: p.paying})
		}
	}
}

// onBusy is what the press's strategy does when the conversation is busy.
func (d *deviceProcess) onBusy(ctx context.Context, permit lease.Permit, held *lease.HeldError, p press, rng *rand.Rand) {
	session := permit.Request().Key.Session
	switch p.strategy {
	case lease.BusyPreempt:
		d.preempt(ctx, permit, held, "", p, rng)
		return
	case lease.BusyJoin:
		if held.RunID != uuid.Nil {
			d.follow(ctx, permit.Request().Key, held)
			return
		}
	case lease.BusyQueue:
		d.queue(ctx, permit, held, "", p, rng)
		return
	case lease.BusyAsk:
		d.ask(ctx, permit, held, p, rng)
		return
	case lease.BusySteer:
		if held.RunID != uuid.Nil {
			d.steer(ctx, permit, held, rng)
			return
		}
	}
	// The local "send" button reconciled with the server: busy, owned by
	// another device, for this much longer.
	d.out.report(Report{Kind: ReportRefused, Session: session,
		Holder: held.Holder, OwnerRun: held.RunID, Fence: held.Fence, Remaining: held.Remaining})
	if p.strategy == lease.BusyWait {
		if l, waited := d.await(ctx, permit, held.Holder, ""); l != nil {
			d.execute(ctx, l, rng, runStart{waited: waited, paying: p.paying})
		}
	}
}

// atLimit is a press refused because the conversation was free but its
// account was at its limit (a plan's live runs): the user refuses, or,
// whatever else its strategy, waits for a slot (lease.Client.Wait, woken
// when one of the account's runs ends), since there is no run of this
// conversation to preempt, join, queue behind, ask or steer.
func (d *deviceProcess) atLimit(ctx context.Context, permit lease.Permit, full *lease.LimitError, p press, rng *rand.Rand) {
	session := permit.Request().Key.Session
	d.out.report(Report{Kind: ReportRefused, Session: session, Slots: full.Slots, Used: len(full.Holders)})
	if p.strategy == lease.BusyRefuse {
		return
	}
	if l, waited := d.awaitReported(ctx, permit, Report{Kind: ReportWaiting, Session: session, Slots: full.Slots, Used: len(full.Holders)}); l != nil {
		d.execute(ctx, l, rng, runStart{waited: waited, paying: p.paying})
	}
}

// await is a refused user (why: what refused it, when not a plain busy) who waits for the conversation: lease.Client.Wait, woken
// by the holder's release (a notification), until it is granted or the
// user's patience runs out. It returns the lease (nil if not granted) and
// how long it waited.
func (d *deviceProcess) await(ctx context.Context, permit lease.Permit, holder, why string) (*lease.Lease, time.Duration) {
	return d.awaitReported(ctx, permit, Report{Kind: ReportWaiting, Session: permit.Request().Key.Session, Holder: holder, Cause: why})
}

// awaitReported is await, reporting waiting as the report says (for an
// account at its limit: its slots).
func (d *deviceProcess) awaitReported(ctx context.Context, permit lease.Permit, waiting Report) (*lease.Lease, time.Duration) {
	session := waiting.Session
	d.out.report(waiting)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, d.timing.patience)
	defer cancel()
	l, err := d.client.Wait(wctx, permit)
	waited := time.Since(start)
	switch {
	case err == nil:
		return l, waited
	case ctx.Err() != nil: // the device is stopping
	case errors.Is(err, context.DeadlineExceeded):
		d.out.report(Report{Kind: ReportGaveUp, Session: session, Waited: waited})
	default:
		d.fail(session, err)
	}
	return nil, waited
}

// runStart is how a run began: after waiting (waited), by preempting
// another device's run (preempted: its holder label), paying (not
// preemptible).
type runStart struct {
	waited    time.Duration
	queued    bool // the wait was in the queue
	preempted string
	handedBy  string // the holder that handed the conversation over to it
	paying    bool
}

// execute is one granted run: a simulated model/tool execution in chunks,
// each chunk's output written through the fence check, while the lease
// library heartbeats. It stops when the work is done, the lease is lost or
// ctx ends, and always ends the run with Release. A run preempted in the
// middle of a chunk still makes that chunk's write, which the fence check
// must refuse.
func (d *deviceProcess) execute(ctx context.Context, l *lease.Lease, rng *rand.Rand, how runStart) {
	tok := l.Token()
	d.out.report(Report{Kind: ReportStarted, Session: tok.Key.Session, Run: tok.PublicRunID(),
		Fence: tok.Fence, ExpiresAt: l.State().ExpiresAt, Waited: how.waited, Queued: how.queued, Paying: how.paying, Holder: how.preempted, HandedBy: how.handedBy,
		Attachment: l.Attachment()})
	chunks := max(1, int(between(rng, d.timing.runMin, d.timing.runMax)/d.timing.chunk))
	next := 0
	var asked <-chan lease.IncomingAsk
	if d.mix.Load().Has(lease.BusyAsk) {
		asked = l.Asked()
	}
	msgs := l.Messages() // the steers its run reads, one chunk later (its next turn)
	var taken []lease.Message
	for i := range chunks {
		start := time.Now()
		a := awaitChunk(ctx, l, d.timing.chunk, &asked)
		if d.frozen(ctx, l, start, d.timing.chunk, i) {
			return
		}
		if ctx.Err() != nil || l.Err() != nil {
			next = i
			break
		}
		start = time.Now()
		d.write(ctx, tok, i)
		next = i + 1
		if d.frozen(ctx, l, start, 0, i+1) {
			return
		}
		if l.Err() != nil {
			break
		}
		d.ackMessages(ctx, l, taken)
		taken = d.takeMessages(l, &msgs, nil)
		if a != nil && d.answerAsk(ctx, l, *a, how.paying) {
			return // handed over: the asker's run has the conversation now
		}
	}
	if errors.Is(l.Err(), lease.ErrPreempted) && ctx.Err() == nil {
		d.write(ctx, tok, next) // the chunk it was producing when it was stopped
	}
	d.finish(ctx, l)
}

// awaitChunk waits for one chunk of simulated work, or until the lease is
// lost or ctx ends. An ask to hand over that arrives meanwhile does not cut
// the chunk short (the holder finishes its step): it is returned (asked
// becomes nil when the lease's channel closes).
func awaitChunk(ctx context.Context, l *lease.Lease, chunk time.Duration, asked *<-chan lease.IncomingAsk) *lease.IncomingAsk {
	t := time.NewTimer(chunk)
	defer t.Stop()
	var got *lease.IncomingAsk
	for {
		select {
		case <-t.C:
			return got
		case <-l.Done():
			return got
		case <-ctx.Done():
			return got
		case a, ok := <-*asked:
			if !ok {
				*asked = nil
				continue
			}
			got = &a
		}
	}
}

// frozen handles a freeze. When the step that began at start took far
// longer than expected and the lease's local safe deadline passed meanwhile,
// the process was frozen while it held the lease (SIGSTOP, a paused VM, a
// long GC pause): it is a zombie. It then acts as a naive client that did not
// look at its lease first: it sends its late heartbeat straight to
// lease.renew, and makes the write it was about to make. The database must
// refuse both. Then it notices the loss and ends the run. frozen reports
// whether it did all that.
func (d *deviceProcess) frozen(ctx context.Context, l *lease.Lease, start time.Time, expected time.Duration, chunk int) bool {
	stall := time.Since(start) - expected
	if stall < d.timing.freeze || time.Now().Before(l.State().Deadline) {
		return false
	}
	tok := l.Token()
	d.out.report(Report{Kind: ReportFrozen, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence, Frozen: stall})
	_, err := d.store.Renew(ctx, tok.Key, tok.RunID, d.cfg.TTL)
	switch {
	case err == nil:
		d.out.report(Report{Kind: ReportLateRenewal, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence, Accepted: true})
	case errors.Is(err, data.ErrNotHeld):
		d.out.report(Report{Kind: ReportLateRenewal, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence})
	case ctx.Err() != nil: // the demo is stopping: the late heartbeat was cut short, no error of the device's
	default:
		d.fail(tok.Key.Session, err)
	}
	d.write(ctx, tok, chunk)
	d.finish(ctx, l)
	return true
}

// finish releases the run and reports how it ended.
func (d *deviceProcess) finish(ctx context.Context, l *lease.Lease) {
	tok := l.Token()
	relErr := l.Release(ctx)
	r := Report{Kind: ReportEnded, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence, How: EndReleased}
	if c := d.cancelled(l); c != nil {
		r.Cancelled, r.Holder, r.Cause = true, c.Message.Sender, "cancelled by "+c.Message.Sender
	}
	var lost *lease.LostError
	if errors.As(l.Err(), &lost) {
		r.How, r.Cause = EndLost, lossCause(lost)
		if errors.Is(lost, lease.ErrPreempted) {
			r.Holder = lost.By.Holder
		}
	}
	if relErr != nil {
		r.Err = relErr.Error()
	}
	d.out.report(r)
}

// lossCause says in a few words why a lease was lost.
func lossCause(lost *lease.LostError) string {
	switch {
	case errors.Is(lost, lease.ErrForceReleased):
		s := "force-released by " + lost.By.Actor
		if lost.By.Reason != "" {
			s += " (" + lost.By.Reason + ")"
		}
		return s
	case errors.Is(lost, lease.ErrPreempted):
		s := "preempted by " + lost.By.Holder
		if lost.By.Reason != "" {
			s += " (" + lost.By.Reason + ")"
		}
		return s
	case errors.Is(lost, lease.ErrTakenOver):
		return fmt.Sprintf("taken over by %s, fence %d", lost.By.Holder, lost.By.Fence)
	case errors.Is(lost, lease.ErrExpired):
		return "local safe deadline passed without a confirmed renewal"
	default:
		return "renewal rejected"
	}
}

// write writes one chunk of the run's output through the fence check and
// reports whether it was accepted.
func (d *deviceProcess) write(ctx context.Context, tok lease.Token, chunk int) {
	accepted, err := WriteChunk(ctx, d.store, tok, d.cfg.Name, chunk)
	if err != nil {
		if ctx.Err() == nil {
			d.fail(tok.Key.Session, err)
		}
		return
	}
	d.out.report(Report{Kind: ReportWrite, Session: tok.Key.Session, Run: tok.PublicRunID(), Fence: tok.Fence, Accepted: accepted})
}
