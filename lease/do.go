package lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasetop/leasetop/internal/data"
)

// Do owns an execution: it acquires p's lease as onBusy says (BusyRefuse:
// Try, BusyWait: Wait, BusyQueue: Queue), runs fn with a context that is
// cancelled when the lease is lost or ctx ends, waits for fn to return, and
// then releases the lease. The strategies that need more than a Permit
// (BusyPreempt: a reason, BusyAsk: a timeout and a fallback) and BusyJoin,
// which the program does itself, are an *data.InputError: acquire with
// Client.Preempt or Client.AskWith and hand the lease to fn yourself.
//
// It returns fn's error, or, when the lease was lost before fn returned, one
// error on one line that errors.Is both ErrLost and the cause
// (ErrForceReleased, ErrTakenOver, ErrPreempted, ErrRejected or ErrExpired;
// errors.As gives the *LostError): the *LostError itself when fn's error was
// only the consequence of the loss (nil, or a context error such as pgx's
// "context canceled"), fn's error when it carries the loss already (the
// context's cause, or FencedTx's ErrStale), else the *LostError followed by
// fn's error. A failed Release is added to fn's error on the same line. When
// the lease is never acquired Do returns the acquisition error and never
// reports a loss.
//
// A cancel message (CancelMessage, to a lease that reads its Messages) is
// not a loss either: Do releases the lease and returns the *CancelledError
// (errors.Is(err, ErrCancelled)), or fn's error with it.
//
// A hand-over is not a loss: when fn handed the lease over (Lease.HandOver,
// in answer to Lease.Asked), Do returns fn's own error, nil when fn returned
// nil or only the consequence of the hand-over (a context error, or an error
// that is ErrHandedOver). fn must return promptly once its context is done:
// the lease is released only after it returns.
func (c *Client) Do(ctx context.Context, p Permit, onBusy OnBusy, fn func(ctx context.Context, l *Lease) error) (err error) {
	l, err := c.acquireFor(ctx, p, onBusy)
	if err != nil {
		return err
	}
	defer func() {
		// After fn returned (or panicked): first see whether ownership was
		// lost while it ran, then release.
		var (
			lost      *LostError
			cancelled *CancelledError
		)
		lostBefore := errors.As(l.Err(), &lost)
		cancelledBefore := errors.As(l.Err(), &cancelled)
		relErr := l.Release(ctx)
		switch {
		case lostBefore && errors.Is(lost.Reason, ErrHandedOver):
			err = afterHandOver(err)
		case lostBefore:
			err = withLoss(lost, err)
		case cancelledBefore:
			err = withCancel(cancelled, err)
		case relErr != nil && err == nil:
			err = relErr
		case relErr != nil:
			err = fmt.Errorf("%w; %w", err, relErr)
		}
	}()
	return l.run(ctx, fn)
}

// acquireFor acquires p's lease for Do as onBusy says.
func (c *Client) acquireFor(ctx context.Context, p Permit, onBusy OnBusy) (*Lease, error) {
	switch onBusy {
	case BusyRefuse:
		return c.Try(ctx, p)
	case BusyWait:
		return c.Wait(ctx, p)
	case BusyQueue:
		return c.Queue(ctx, p)
	}
	return nil, &data.InputError{Field: "busy strategy", Problem: fmt.Sprintf("Do takes refuse, wait or queue, got %s: acquire with Client.Preempt or Client.AskWith, then work", onBusy)}
}

// withLoss is Do's error when the lease was lost while fn ran and fn
// returned err.
func withLoss(lost *LostError, err error) error {
	switch {
	case err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return lost // the work stopped because of the loss: the loss says it all
	case errors.Is(err, ErrLost):
		return err // it carries the loss already: the context's cause, FencedTx's ErrStale
	}
	return fmt.Errorf("%w; the work failed too: %w", lost, err)
}

// withCancel is Do's error when a cancel message stopped fn (its context
// ended with cancelled) and fn returned err: the *CancelledError when err is
// only its consequence.
func withCancel(cancelled *CancelledError, err error) error {
	switch {
	case err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return cancelled
	case errors.Is(err, ErrCancelled):
		return err // it carries the cancel already: the context's cause, FencedTx's ErrStale
	}
	return fmt.Errorf("%w; the work failed too: %w", cancelled, err)
}

// afterHandOver is Do's error when fn handed the lease over and returned
// err: nil when err is only the hand-over's consequence.
func afterHandOver(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrHandedOver) {
		return nil
	}
	return err
}

// run calls fn with a context cancelled by ctx or by the end of the lease,
// whichever comes first, with the lease's cause.
func (l *Lease) run(ctx context.Context, fn func(ctx context.Context, l *Lease) error) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.ctx, func() { cancel(context.Cause(l.ctx)) })
	defer stop()
	return fn(wctx, l)
}
