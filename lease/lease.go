package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Status is where a Lease is in its life:
//
//	Held ⇄ AtRisk → Lost
//	  └───────┴───→ Released
//
// Lost and Released are final: nothing revives a lease.
type Status int

// The statuses of a Lease.
const (
	// Held: the last acquire or renewal was confirmed and the local safe
	// deadline has not passed.
	Held Status = iota
	// AtRisk: a renewal failed (error or timeout) but the local deadline has
	// not passed yet, like Chubby's jeopardy or DynamoDB's danger zone. The
	// holder still owns the lease; it should get ready to stop.
	AtRisk
	// Lost: the lease ended without Release. Context() is cancelled with a
	// *LostError.
	Lost
	// Released: Release ended the lease. Context() is cancelled with
	// ErrReleased (unless it was lost first).
	Released
)

func (s Status) String() string {
	switch s {
	case Held:
		return "held"
	case AtRisk:
		return "at risk"
	case Lost:
		return "lost"
	default:
		return "released"
	}
}

// State is a snapshot of a Lease's status.
type State struct {
	Status Status
	// Since is when Status last changed (local clock).
	Since time.Time
	// Err is the last renewal error while AtRisk, the *LostError when Lost,
	// ErrReleased when Released, nil when Held.
	Err error
	// Deadline is the local safe deadline: the send time of the last
	// confirmed acquire or renewal + TTL - SafetyMargin, on this process's
	// monotonic clock. The lease counts as held only before it.
	Deadline time.Time
	// ExpiresAt is the expiry the database reported for the last confirmed
	// acquire or renewal, on the database clock.
	ExpiresAt time.Time
}

// String words the state in one line: the status, and what goes with it
// (the local safe deadline and the database's expiry while held or at
// risk, the error that put it at risk, the cause of a loss). Times are
// shown to the millisecond, the deadline on the local clock and the expiry
// on the database clock in UTC.
func (s State) String() string {
	const clock = "15:04:05.000"
	until := fmt.Sprintf("safe until %s, expires %sZ on the database clock",
		s.Deadline.Format(clock), s.ExpiresAt.UTC().Format(clock))
	switch s.Status {
	case Held:
		return "held, " + until
	case AtRisk:
		if s.Err == nil {
			return "at risk since " + s.Since.Format(clock) + ", " + until
		}
		return fmt.Sprintf("at risk since %s (%v), %s", s.Since.Format(clock), s.Err, until)
	case Lost:
		if s.Err == nil {
			return "lost"
		}
		return fmt.Sprintf("lost: %v", s.Err)
	}
	return s.Status.String()
}

// Lease is one execution's ownership of a session: a run id, a fencing
// token and a heartbeat that keeps it. Get one from Client.Try,
// Client.Wait or Client.Do; stop work when Context() is done; call Release
// when the work has returned. Its methods are safe for concurrent use.
type Lease struct {
	client *Client
	cfg    Config
	token  Token
	holder string
	attach string // the attachment it published last (Request.Attachment, SetAttachment)

	ctx    context.Context
	cancel context.CancelCauseFunc

	keepCtx  context.Context    // the heartbeat's: cancelled by Release or a loss, not by a cancel message
	stopKeep context.CancelFunc // stops the heartbeat
	done     chan struct{}      // closed when the heartbeat has ended
	early    chan struct{}      // the renewer asks the heartbeat to renew now, in a batch
	check    chan struct{}      // the holder watch asks the heartbeat to check the lease now (watch.go)
	sub      *subscription      // the holder watch's subscription to its key; nil without one
	due      atomic.Int64       // when the next renewal is due (Unix ns); MaxInt64 while renewing

	mu       sync.Mutex
	state    State
	lastErr  error // the last renewal error, for an ErrExpired loss
	changed  chan struct{}
	watchdog *time.Timer // loses the lease at the local deadline

	releaseMu   sync.Mutex // serialises Release calls
	rowGone     bool       // a release confirmed this run's row is gone
	stoppedSent bool       // Release told the preemptor the work stopped (l.mu)

	renewMu sync.Mutex // held by each renewal, and by HandOver while it moves the lease
	asks    askWatch   // Asked's watch (asked.go)
	inbox   inboxWatch // Messages' watch (inbox.go)
	acks    ackQueue   // Message.Ack's calls waiting to be joined into one (inbox.go)
}

// Key returns the lease's key.
func (l *Lease) Key() Key { return l.token.Key }

// RunID returns this execution's public run id: the id the lease table, the
// events, the monitor and other runs' HeldErrors show for it (an operator
// force-releases by it). It is not a capability: the run's own id, which
// renews, releases and fence-checks, stays in Token and is never printed.
// Both are fresh for every acquisition.
func (l *Lease) RunID() uuid.UUID { return l.token.PublicRunID() }

// Fence returns the fencing token: it rises with every change of owner of
// this key and never changes while this run holds it. Pass it to anything
// the run writes, and have the writer refuse lower tokens. Fences are not
// consecutive (keys share one sequence, and an acquire attempt that loses a
// takeover still draws a value): compare them, never count them.
func (l *Lease) Fence() int64 { return l.token.Fence }

// Token returns the key, the run's own (secret) id and the fence: what a
// protected resource checks. Hand it only to code that checks the fence.
func (l *Lease) Token() Token { return l.token }

// Holder returns the holder label.
func (l *Lease) Holder() string { return l.holder }

// TTL returns the lease's time to live on the database clock.
func (l *Lease) TTL() time.Duration { return l.cfg.TTL }

// Context returns a context that is cancelled the moment this run might not
// own the lease any more, or must stop. context.Cause tells why: a
// *LostError (ErrLost with ErrRejected, ErrForceReleased, ErrTakenOver or
// ErrExpired), ErrReleased, or a *CancelledError (ErrCancelled: a cancel
// message, see Messages; the lease is still held until Release). It carries the values of the context given to Try or Wait, but
// not its cancellation: that context bounds only the acquisition.
//
// A loss is noticed at once, not at the next renewal: the Client listens to
// the keys it holds, and any event naming one that is not this run's own (a
// forced release, a takeover...) makes it check that lease right away; a
// lease the check finds gone cancels the context within a round trip of the
// notification (in poll mode, of the poll that read it). The notification
// itself proves nothing: the Client acts only on the event row it reads
// back, and only the database's answer ends the lease.
func (l *Lease) Context() context.Context { return l.ctx }

// Done is Context().Done().
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Err returns nil while the lease is held (or at risk), else the cause from
// Context().
func (l *Lease) Err() error { return context.Cause(l.ctx) }

// State returns the current state.
func (l *Lease) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Changed receives a value after State changes (held, at risk, lost,
// released, and each confirmed renewal). Signals coalesce: read State after
// each one. Meant for one consumer.
func (l *Lease) Changed() <-chan struct{} { return l.changed }

// setLocked changes the status; l.mu must be held. It never leaves a final
// status.
func (l *Lease) setLocked(st Status, err error) {
	if l.state.Status == Lost || l.state.Status == Released {
		return
	}
	if l.state.Status != st {
		now := time.Now()
		if l.state.Status == AtRisk {
			l.cfg.Metrics.observeAtRisk(now.Sub(l.state.Since))
		}
		l.state.Since = now
	}
	l.state.Status, l.state.Err = st, err
	if st == Lost || st == Released {
		l.watchdog.Stop()
		l.cancel(err)
		l.stopKeep() // the heartbeat outlives a cancel message, not the lease
	}
	if lost, ok := err.(*LostError); ok && st == Lost {
		l.cfg.Metrics.observeLost(lost)
	}
	signal(l.changed)
}

// finalLocked reports whether the lease is lost or released; l.mu must be held.
func (l *Lease) finalLocked() bool {
	return l.state.Status == Lost || l.state.Status == Released
}

// signal sends on a 1-buffered channel without blocking; signals coalesce.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// CheckFence is l.Token().Check: the same-database fence check, to call
// inside the transaction that makes a protected write.
func (l *Lease) CheckFence(ctx context.Context, tx pgx.Tx) error { return l.token.Check(ctx, tx) }
