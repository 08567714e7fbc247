package lease

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Preempt acquires p's lease for a fresh run id now, taking it from the run
// that holds it: one attempt, like Try, that does not wait for the holder
// to finish. It needs a database login in the group lease_preempt
// (otherwise the error is data.ErrPermission, saying so): preempting stops
// someone else's work.
//
// The preempted run's renewals and fenced writes are refused from the
// moment Preempt returns; its Lease.Context is cancelled with a *LostError
// whose Reason is ErrPreempted and whose By names this run, its label and
// reason (at its next renewal; at once where its Client hears the
// notification for its key). The history records a preempted event.
//
// A free key or an expired lease is granted as Try grants it, and nobody is
// preempted. In an account or pool at its limit, Preempt takes the slot of
// the account's lowest-priority preemptible run whose Request.Priority is
// below p's, in another session: that run's lease ends as a forced release
// does (its *LostError's Reason is ErrForceReleased, By.Reason "preempted
// for a slot by run ..."), and WaitPreempted waits for it as for a victim
// of the same session. Preempt returns, holding nothing:
//   - ErrNotPreemptible (also ErrHeld, with a *HeldError naming the holder)
//     when the holder declared that it must not be preempted;
//   - ErrHeld (a *HeldError naming the new holder) when the key changed
//     hands while the call waited for it: of Preempts racing for one holder,
//     exactly one wins;
//   - a *LimitError (ErrAtLimit, ErrHeld) when the account or pool is at
//     its limit and no run of a lower priority may be preempted;
//   - invalid input (reason: at most data.MaxReasonBytes, the rules of holder
//     labels), ErrNoPermit, ErrClosed, ErrExpired or the database's error,
//     as Try.
//
// reason is recorded in the event and shown to the preempted run. The new
// lease carries p's holder options (Request.NotPreemptible, Attachment).
//
// Preempt returns as soon as the lease is this run's: the preempted run's
// program may still be working (its fenced writes are refused). Call
// Lease.WaitPreempted before work that must not overlap it.
func (c *Client) Preempt(ctx context.Context, p Permit, reason string) (*Lease, error) {
	if err := c.check(p); err != nil {
		return nil, err
	}
	return c.preempt(ctx, p, reason, &tracker{runID: uuid.New()})
}

// preempt is Preempt for tr's run id (a fresh one, or an ask's:
// askFallback).
func (c *Client) preempt(ctx context.Context, p Permit, reason string, tr *tracker) (*Lease, error) {
	if err := data.ValidateReason(reason); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	preempt := func(ctx context.Context, req Request, runID uuid.UUID) (data.Grant, error) {
		return c.store.Preempt(ctx, req.Key, runID, c.cfg.TTL, req.Holder, reason, req.options())
	}
	l, err := c.try(ctx, p.req, tr, preempt)
	if err != nil && tr.maybeGranted() {
		c.cleanup(p.req.Key, tr.runID, tr.lastSent.Add(c.cfg.TTL-c.cfg.SafetyMargin))
	}
	return l, err
}

// WaitPreempted waits until the run this lease was preempted from says its
// work has stopped: its Release after the loss (which Do makes when its
// function returned, and leasetop run once its command exited). A preempt
// ends the old lease at once, but not the old program's work: fences refuse
// its fenced writes, nothing else. So a preemptor whose own work must not
// overlap the old one calls WaitPreempted, bounded by ctx (leasetop run
// waits its --grace at most), before it starts.
//
// It returns nil when the run said so, or when this lease preempted nobody
// (it was granted as Try grants); context.Cause(ctx) when ctx ends first;
// the lease's cause when it ends first; a permanent database error (see
// data.Permanent). It reads the database every few tens of milliseconds,
// up to 200 ms apart.
func (l *Lease) WaitPreempted(ctx context.Context) error {
	delay := 20 * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-l.Done():
			return l.Err()
		case <-timer.C:
		}
		pending, err := l.client.store.PreemptPending(ctx, l.token.Key, l.token.RunID)
		switch {
		case err == nil && !pending:
			return nil
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil && data.Permanent(err):
			return err
		}
		timer.Reset(delay)
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// SetAttachment replaces the attachment this run publishes on its lease
// ("": none), such as the id of the stream it writes to now. The rules are
// Request.Attachment's. It returns ErrStale when the run no longer holds
// the lease, ErrReleased after Release.
func (l *Lease) SetAttachment(ctx context.Context, attachment string) error {
	if err := data.ValidateAttachment(attachment); err != nil {
		return err
	}
	if err := l.Err(); err != nil {
		return err
	}
	err := l.client.store.SetAttachment(ctx, l.token.Key, l.token.RunID, attachment)
	if err == data.ErrNotHeld {
		return ErrStale
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.attach = attachment
	l.mu.Unlock()
	return nil
}

// Attachment returns what this run published last on its lease
// (Request.Attachment, SetAttachment).
func (l *Lease) Attachment() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attach
}
