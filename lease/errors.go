package lease

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// Why a lease ended. context.Cause(l.Context()) is a *LostError for a loss
// (errors.Is(cause, ErrLost) and one of ErrRejected, ErrForceReleased,
// ErrTakenOver, ErrPreempted or ErrExpired) or ErrReleased after Release.
var (
	// ErrLost: the lease ended without Release; the run must stop.
	ErrLost = errors.New("lease lost")
	// ErrRejected: a renewal was refused: the database says this run no
	// longer holds an unexpired lease (taken over, force-released, or
	// expired on the server).
	ErrRejected = errors.New("renewal rejected")
	// ErrForceReleased: an operator force-released the lease. It wraps
	// ErrRejected.
	ErrForceReleased = fmt.Errorf("%w: force-released", ErrRejected)
	// ErrTakenOver: another run took the lease over after it expired on the
	// server. It wraps ErrRejected.
	ErrTakenOver = fmt.Errorf("%w: taken over", ErrRejected)
	// ErrPreempted: a member of lease_preempt took the lease from this run
	// while it was unexpired (Client.Preempt). The *LostError's By names the
	// preemptor: its label, public run id and reason. It wraps ErrRejected.
	ErrPreempted = fmt.Errorf("%w: preempted", ErrRejected)
	// ErrNotPreemptible: Preempt was refused because the holder declared
	// that it must not be preempted (Request.NotPreemptible); nothing was
	// written. The error is also an ErrHeld with a *HeldError.
	ErrNotPreemptible = data.ErrNotPreemptible
	// ErrExpired: the local safe deadline passed without a confirmed renewal
	// (the database was unreachable or too slow, or this process was paused).
	ErrExpired = errors.New("local deadline passed without a confirmed renewal")
	// ErrReleased: the lease was released by Release. It is not a loss.
	ErrReleased = errors.New("lease released")
	// ErrDenied: the Authorizer refused the request; the error wraps the
	// Authorizer's own error too.
	ErrDenied = errors.New("not authorized to compete for this lease")
	// ErrNoPermit: Try, Wait or Do got a Permit that this Client did not
	// mint (for example the zero Permit).
	ErrNoPermit = errors.New("no permit: call Client.Authorize first")
	// ErrStale: a fence check failed: the token's run no longer holds the
	// lease with that fence. The protected write must not happen.
	ErrStale = errors.New("stale fencing token")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("lease client closed")
)

// Aliases of the data package's names that callers of this package need.
type (
	// Key names a session's lease.
	Key = data.Key
	// HeldError is the error Try returns when another run holds the
	// lease: errors.Is(err, ErrHeld), with the holder and its remaining TTL.
	HeldError = data.HeldError
	// Event is one ownership transition from the lease history.
	Event = data.Event
)

// ErrHeld: another run holds an unexpired lease (see HeldError).
var ErrHeld = data.ErrHeld

// LostError is the cause of a lost lease.
type LostError struct {
	Key   Key
	RunID uuid.UUID // the lost run's public id (Lease.RunID)
	Fence int64
	// Reason is ErrForceReleased, ErrTakenOver, ErrPreempted, ErrRejected,
	// ErrExpired or ErrHandedOver.
	Reason error
	// By is the event that ended the lease when it could be read (a
	// force_released, taken_over, preempted or handed_over event), else the
	// zero Event.
	By data.Event
	// Last is the last renewal error seen before an ErrExpired loss, if any.
	Last error
}

// Error describes the loss. Text that came from the database (holder labels,
// actors, reasons) is quoted, so it cannot carry terminal escapes.
func (e *LostError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lease %q fence %d lost: %v", e.Key.String(), e.Fence, e.Reason)
	switch e.By.Kind {
	case data.KindForceReleased:
		fmt.Fprintf(&b, " by %q", e.By.Actor)
		if e.By.Reason != "" {
			fmt.Fprintf(&b, " (reason %q)", e.By.Reason)
		}
	case data.KindTakenOver:
		fmt.Fprintf(&b, " by run %s (%q, fence %d)", e.By.RunID, e.By.Holder, e.By.Fence)
	case data.KindPreempted:
		fmt.Fprintf(&b, " by run %s (%q, fence %d, login %q", e.By.RunID, e.By.Holder, e.By.Fence, e.By.Actor)
		if e.By.Reason != "" {
			fmt.Fprintf(&b, ", reason %q", e.By.Reason)
		}
		b.WriteString(")")
	case data.KindHandedOver:
		fmt.Fprintf(&b, " to run %s (%q, fence %d)", e.By.RunID, e.By.Holder, e.By.Fence)
	}
	if e.Last != nil {
		fmt.Fprintf(&b, "; last renewal error: %v", e.Last)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrLost) and errors.Is(err, e.Reason) (and
// what Reason wraps) true.
func (e *LostError) Unwrap() []error { return []error{ErrLost, e.Reason} }
