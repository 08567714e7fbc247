package device

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// press is one press of send: the strategy its client uses if the
// conversation is busy, whether the run it would start is paying (not
// preemptible), and the stream it would write to (its attachment, which a
// device that joins reads).
type press struct {
	strategy lease.OnBusy
	paying   bool
	stream   string
}

// press draws the next press of send.
func (d *deviceProcess) press(rng *rand.Rand) press {
	p := press{strategy: d.mix.Load().pick(rng)}
	p.paying = d.mix.Load().Has(lease.BusyPreempt) && rng.IntN(payingOneIn) == 0
	p.stream = fmt.Sprintf("stream-%s-%d-%d", d.cfg.Name, os.Getpid(), d.streams.Add(1))
	return p
}

// preemptReason is what a preempt tells the run it stops.
const preemptReason = "a new message"

// preempt is a new message sent while another device's run is active (why:
// what it falls back from, when it is a fallback): it
// stops that run and starts its own (lease.Client.Preempt). A paying run
// refuses; its user is told so and queues for it (waits, without queue in
// the mix). A login without the
// lease_preempt role cannot preempt: the device says so and waits too.
func (d *deviceProcess) preempt(ctx context.Context, permit lease.Permit, held *lease.HeldError, why string, p press, rng *rand.Rand) {
	session := permit.Request().Key.Session
	d.out.report(Report{Kind: ReportPreempting, Session: session, Holder: held.Holder, OwnerRun: held.RunID, Fence: held.Fence, Cause: why})
	l, err := d.client.Preempt(ctx, permit, preemptReason)
	var now *lease.HeldError
	switch {
	case err == nil:
		d.execute(ctx, l, rng, runStart{preempted: held.Holder, paying: p.paying})
		return
	case errors.Is(err, lease.ErrNotPreemptible) && errors.As(err, &now):
		d.out.report(Report{Kind: ReportPreemptRefused, Session: session, Holder: now.Holder, OwnerRun: now.RunID, Fence: now.Fence,
			Remaining: now.Remaining})
		if d.mix.Load().Has(lease.BusyQueue) {
			d.queue(ctx, permit, now, "paying", p, rng)
		} else if l, waited := d.await(ctx, permit, now.Holder, "paying"); l != nil {
			d.execute(ctx, l, rng, runStart{waited: waited, paying: p.paying})
		}
	case errors.As(err, &now): // another preempt or acquire won the race
		d.out.report(Report{Kind: ReportRefused, Session: session,
			Holder: now.Holder, OwnerRun: now.RunID, Fence: now.Fence, Remaining: now.Remaining})
	case ctx.Err() != nil:
	case errors.Is(err, data.ErrPermission):
		d.fail(session, fmt.Errorf("cannot preempt: the login is not in lease_preempt: %w", err))
		if l, waited := d.await(ctx, permit, held.Holder, "may not preempt"); l != nil {
			d.execute(ctx, l, rng, runStart{waited: waited, paying: p.paying})
		}
	default:
		d.fail(session, err)
	}
}

// follow joins the run that holds key instead of starting one: it reads
// the holder's attachment (the stream that run writes to) and follows it
// until that run ends or its user's patience runs out. No ownership
// changes.
func (d *deviceProcess) follow(ctx context.Context, key lease.Key, held *lease.HeldError) {
	d.out.report(Report{Kind: ReportFollowing, Session: key.Session, Holder: held.Holder, OwnerRun: held.RunID, Fence: held.Fence,
		Attachment: held.Attachment})
	start := time.Now()
	deadline := start.Add(d.timing.patience)
	for sleep(ctx, d.timing.chunk) && time.Now().Before(deadline) {
		l, clock, ok, err := d.store.Lease(ctx, key)
		if err != nil || !ok || l.RunID != held.RunID || !l.ExpiresAt.After(clock.At(time.Now())) {
			break
		}
	}
	d.out.report(Report{Kind: ReportUnfollowed, Session: key.Session, OwnerRun: held.RunID, Waited: time.Since(start)})
}
