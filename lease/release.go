package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Release ends the lease: it stops the heartbeat, cancels Context() with
// ErrReleased (a lost lease keeps its *LostError), then deletes this run's
// row. Call it after the work has returned, never while it still runs.
//
// After a preempt (ErrPreempted), Release also tells the preemptor that this
// run's work has stopped (Lease.WaitPreempted), once, best effort: a
// preemptor that is not told waits its own bound.
//
// Release is idempotent and never revives anything: the database deletes
// the row only if this run still holds it, so a late or repeated Release
// cannot touch the next holder's lease. It runs on a context detached from
// ctx's cancellation (ctx's values are kept), bounded by
// Config.ReleaseTimeout, so it works during shutdown. It returns an error
// only when the database could not be reached; the lease then expires by
// itself after its TTL, and calling Release again retries. Release on a nil
// *Lease returns nil.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	l.stopKeep()
	<-l.done
	if l.inbox.watching.Load() {
		<-l.inbox.done // it ends with the heartbeat's context
	}
	l.mu.Lock()
	l.setLocked(Released, ErrReleased)
	timeout := l.releaseTimeoutLocked()
	preempted := l.preemptedLocked()
	l.mu.Unlock()
	if preempted {
		l.reportStopped(ctx)
	}
	if l.rowGone || timeout <= 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, err := l.client.store.Release(rctx, l.token.Key, l.token.RunID); err != nil {
		return fmt.Errorf("release %q: %w", l.token.Key.String(), err)
	}
	l.rowGone = true
	return nil
}

// releaseTimeoutLocked bounds the database release by what it can still
// achieve; l.mu must be held. After a rejected renewal the row is not this
// run's: nothing to delete. After a local expiry the database was
// unreachable and the row expires on the server within about one safety
// margin anyway, so waiting longer than that for the release only delays
// the caller.
func (l *Lease) releaseTimeoutLocked() time.Duration {
	var lost *LostError
	switch {
	case !errors.As(l.state.Err, &lost):
		return l.cfg.ReleaseTimeout
	case errors.Is(lost.Reason, ErrRejected):
		l.rowGone = true
		return 0
	default:
		return min(l.cfg.ReleaseTimeout, max(l.cfg.SafetyMargin, 100*time.Millisecond))
	}
}

// preemptedLocked reports whether the lease was lost to a preempt and the
// preemptor has not been told yet that the work stopped; l.mu must be held.
// A preempt for a slot of the account (Client.Preempt in an account at its
// limit) ends the lease as a forced release does, so a forced release is
// told too: for a run nobody preempted the call writes nothing.
func (l *Lease) preemptedLocked() bool {
	var lost *LostError
	if l.stoppedSent || !errors.As(l.state.Err, &lost) ||
		!errors.Is(lost.Reason, ErrPreempted) && !errors.Is(lost.Reason, ErrForceReleased) {
		return false
	}
	l.stoppedSent = true
	return true
}

// reportStopped tells the preemptor that this run's work has stopped
// (data.Store.PreemptStopped), bounded by ReleaseTimeout. Best effort: the
// preemptor waits at most its own bound anyway.
func (l *Lease) reportStopped(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.ReleaseTimeout)
	defer cancel()
	_, _ = l.client.store.PreemptStopped(rctx, l.token.Key, l.token.RunID)
}
