package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// IncomingAsk is another run's request that this lease be handed over to
// it ("continue on this device"), as this lease's holder receives it on
// Lease.Asked; Client.Ask is the asker's side. Answer it with
// Lease.HandOver or IncomingAsk.Decline before Until, or let it expire: the
// asker then falls back to what it chose (give up, queue or preempt).
type IncomingAsk struct {
	Key Key
	// RunID is the asker's public run id; Holder the label it would hold
	// the lease under (untrusted text: quote or escape it to show it).
	RunID  uuid.UUID
	Holder string
	// Until is the ask's deadline on the database clock; Remaining the
	// time left to it when it was read.
	Until     time.Time
	Remaining time.Duration

	lease *Lease
}

// Ask is IncomingAsk: an ask this lease received.
//
// Deprecated: use IncomingAsk; Client.Ask is the sending side.
type Ask = IncomingAsk

// Decline refuses the ask: the asker is told, and the lease stays with this
// run. It returns an *AskError with ErrAskExpired when the deadline had
// passed, ErrNoAsk when no ask is pending for this run (another one
// answered it), and the lease's cause when it is no longer held.
func (a IncomingAsk) Decline(ctx context.Context) error {
	l := a.lease
	if l == nil {
		return ErrNoAsk
	}
	if err := l.Err(); err != nil {
		return err
	}
	ans, err := l.client.store.DeclineHandover(ctx, l.token.Key, l.token.RunID)
	if err != nil {
		return err
	}
	return l.answerErr(ans, data.AskDeclined)
}

// HandOver hands this lease over to the run whose ask is pending for it, in
// one transaction: the lease moves to that run with a higher fence, and
// nobody else can take it in between. Call it when the work has stopped, as
// for Release. Afterwards the lease is lost: Context() is cancelled with a
// *LostError whose Reason is ErrHandedOver and whose By names the asker
// (run, label, fence), and Release does nothing.
//
// It returns an *AskError with ErrAskExpired when the ask's deadline passed
// first (the lease stays with this run; the asker falls back), ErrNoAsk
// when no ask is pending, and the lease's cause when it is no longer held;
// the lease is then unchanged. A database error leaves the outcome unknown:
// the lease's next renewal tells (refused with ErrHandedOver if it moved).
func (l *Lease) HandOver(ctx context.Context) error {
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	if err := l.Err(); err != nil {
		return err
	}
	l.renewMu.Lock() // no renewal of this run in flight while the lease moves
	ans, err := l.client.store.HandOver(ctx, l.token.Key, l.token.RunID, l.cfg.TTL)
	if err == nil && ans.Outcome == data.AskHandedOver {
		l.mu.Lock()
		l.rowGone = true
		l.setLocked(Lost, l.lostError(ErrHandedOver, data.Event{
			Kind: data.KindHandedOver, Key: l.token.Key,
			RunID: ans.Ask.RunID, Holder: ans.Ask.Holder, Fence: ans.Fence,
			PrevRunID: l.RunID(), PrevFence: l.token.Fence,
		}, nil))
		l.mu.Unlock()
	}
	l.renewMu.Unlock()
	if err != nil {
		return err
	}
	if ans.Outcome == data.AskHandedOver {
		l.stopKeep()
		<-l.done
		return nil
	}
	return l.answerErr(ans, data.AskHandedOver)
}

// answerErr is the error for a holder's answer other than want.
func (l *Lease) answerErr(ans data.AskAnswer, want data.AskOutcome) error {
	switch ans.Outcome {
	case want:
		return nil
	case data.AskExpired:
		return &AskError{Key: l.token.Key, Reason: ErrAskExpired, Ask: ans.Ask}
	case data.AskNoAsk:
		return ErrNoAsk
	case data.AskNotHeld:
		if err := l.Err(); err != nil {
			return err
		}
		return fmt.Errorf("lease %q: %w: the database says this run no longer holds it", l.token.Key.String(), ErrRejected)
	}
	return fmt.Errorf("lease %q: unexpected answer %q", l.token.Key.String(), ans.Outcome)
}

// Asked delivers the asks to hand this lease over, each once, and is closed
// when the lease ends. The first call starts watching: from then on every
// renewal of the lease reads the pending ask in the same round trip (a
// renewal batched with other leases' reads it just after), so an ask is
// delivered at the lease's next renewal at the latest, within RenewInterval;
// a Client that renews a lease at once on a notification for its key (the
// holder watch) delivers it within milliseconds. A lease that never calls
// Asked costs nothing more. The channel holds one ask; an ask left unread is
// offered again at the next renewal while it is pending.
func (l *Lease) Asked() <-chan IncomingAsk {
	l.asks.once.Do(func() {
		l.asks.ch = make(chan IncomingAsk, 1)
		l.asks.watching.Store(true)
		go func() {
			l.checkAsk() // one pending already
			<-l.keepCtx.Done()
			l.asks.mu.Lock()
			defer l.asks.mu.Unlock()
			l.asks.closed = true
			close(l.asks.ch)
		}()
	})
	return l.asks.ch
}

// askWatch is a Lease's watch of its asks, started by Asked.
type askWatch struct {
	once     sync.Once
	watching atomic.Bool // Asked was called: renewals read the pending ask

	mu        sync.Mutex
	ch        chan IncomingAsk
	closed    bool
	delivered uuid.UUID // the asker last delivered
}

// noteAsk delivers a, the ask pending for this lease that a renewal (or a
// read) found, unless it was delivered already or the channel is full.
func (l *Lease) noteAsk(a *data.PendingAsk) {
	if a == nil || a.HolderRunID != l.RunID() {
		return
	}
	w := &l.asks
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || a.RunID == w.delivered {
		return
	}
	select {
	case w.ch <- IncomingAsk{Key: l.token.Key, RunID: a.RunID, Holder: a.Holder, Until: a.Until, Remaining: a.Remaining, lease: l}:
		w.delivered = a.RunID
	default: // the last one is unread: offered again at the next renewal
	}
}

// checkAsk reads the pending ask on its own (for a renewal that could not
// carry the read) and delivers it. Best effort: bounded by RenewTimeout.
func (l *Lease) checkAsk() {
	ctx, cancel := context.WithTimeout(l.keepCtx, l.cfg.RenewTimeout)
	defer cancel()
	if a, err := l.client.store.PendingAsk(ctx, l.token.Key); err == nil {
		l.noteAsk(a)
	}
}

// Errors of asking to hand over.
var (
	// ErrHandedOver: this run handed its lease over (Lease.HandOver); the
	// *LostError's By names the run it went to.
	ErrHandedOver = errors.New("handed over")
	// ErrNoAsk: no ask to hand over is pending for this lease.
	ErrNoAsk = errors.New("no ask to hand over is pending")
	// ErrAskBusy: another run's ask is pending on the lease; the *AskError
	// names it and its deadline.
	ErrAskBusy = errors.New("another run has asked the holder to hand over")
	// ErrAskDeclined: the holder declined the ask.
	ErrAskDeclined = errors.New("the holder declined to hand over")
	// ErrAskExpired: the ask passed its deadline unanswered (or its holder
	// let the lease go to another run first).
	ErrAskExpired = errors.New("the ask to hand over expired unanswered")
	// ErrAskQueued: the session's queue has runs ahead of the asker, which
	// an ask may not pass (AskError.Ahead says how many); nothing was
	// written. Join the queue instead (BusyQueue).
	ErrAskQueued = errors.New("runs are queued ahead; an ask may not pass them")
)

// AskError is how an ask to hand over ended without the lease: the asker
// was refused because another run's ask is pending (ErrAskBusy), the holder
// declared itself not preemptible (ErrNotPreemptible) or runs are queued
// ahead (ErrAskQueued), the holder declined (ErrAskDeclined), or the ask
// expired (ErrAskExpired). It is an ErrHeld too: the session stays busy.
type AskError struct {
	Key Key
	// Reason is ErrAskBusy, ErrNotPreemptible, ErrAskQueued, ErrAskDeclined
	// or ErrAskExpired.
	Reason error
	Ask    data.PendingAsk // the ask: another run's (ErrAskBusy) or this run's
	Ahead  int             // ErrAskQueued: the live tickets ahead of the asker
	Held   *HeldError      // the holder when it was read, else nil
}

// Error describes the outcome. Labels are quoted: they are untrusted text.
func (e *AskError) Error() string { return e.Describe(strconv.Quote) }

// Describe words the outcome in one line, every text that came from the
// database (the key, the other asker's label) passed through quote: Error
// quotes with strconv.Quote; a line shown on a terminal passes a function
// that also makes look-alikes and combining marks visible (leasetop's
// termtext.Quote).
func (e *AskError) Describe(quote func(string) string) string {
	key := quote(e.Key.String())
	switch {
	case errors.Is(e.Reason, ErrAskBusy):
		return fmt.Sprintf("lease %s: %v: run %s (%s), until %s (%s left)", key, e.Reason,
			e.Ask.RunID, quote(e.Ask.Holder), e.Ask.Until.UTC().Format(time.RFC3339Nano), e.Ask.Remaining.Round(time.Millisecond))
	case errors.Is(e.Reason, ErrNotPreemptible):
		return fmt.Sprintf("lease %s: the holder declared that it must not be preempted, so it may not be asked to hand over either", key)
	case errors.Is(e.Reason, ErrAskQueued):
		return fmt.Sprintf("lease %s: %d queued ahead; an ask may not pass them", key, e.Ahead)
	}
	return fmt.Sprintf("lease %s: %v", key, e.Reason)
}

// Unwrap makes errors.Is(err, e.Reason) and errors.Is(err, ErrHeld) true.
func (e *AskError) Unwrap() []error { return []error{e.Reason, ErrHeld} }
