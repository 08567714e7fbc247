package lease

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Why a lease ended. context.Cause(l.Context()) is a *LostError for a loss
// (errors.Is(cause, ErrLost) and one of ErrRejected, ErrForceReleased,
// ErrTakenOver, ErrPreempted or ErrExpired) or ErrReleased after Release.
var (
	// ErrLost: the lease ended without Release; the run must stop.
	ErrLost = errors.New("lease lost")
	// ErrRejected: the database says this run no longer holds an unexpired
	// lease (taken over, force-released, preempted or expired on the
	// server): a renewal was refused, or the holder watch read the row.
	ErrRejected = errors.New("renewal rejected")
	// ErrForceReleased: an operator force-released the lease. It wraps
	// ErrRejected.
	ErrForceReleased error = &ended{"force-released"}
	// ErrTakenOver: another run took the lease over after it expired on the
	// server. It wraps ErrRejected.
	ErrTakenOver error = &ended{"taken over"}
	// ErrPreempted: a member of lease_preempt took the lease from this run
	// while it was unexpired (Client.Preempt). The *LostError's By names the
	// preemptor: its label, public run id and reason. It wraps ErrRejected.
	// Release after it tells the preemptor that the work stopped
	// (Lease.WaitPreempted).
	ErrPreempted error = &ended{"preempted"}
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

// Error describes the loss. Text that came from the database (the key,
// holder labels, actors, reasons) is quoted, so it cannot carry terminal
// escapes.
func (e *LostError) Error() string { return e.Describe(strconv.Quote) }

// Describe words the loss in one line, every text that came from the
// database (the key, holder labels, actors, reasons) passed through quote:
// Error quotes with strconv.Quote; a line shown on a terminal passes a
// function that also makes look-alikes and combining marks visible
// (leasetop's termtext.Quote).
func (e *LostError) Describe(quote func(string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lease %s fence %d lost: %v", quote(e.Key.String()), e.Fence, e.Reason)
	switch e.By.Kind {
	case data.KindForceReleased:
		fmt.Fprintf(&b, " by %s", quote(e.By.Actor))
		if e.By.Reason != "" {
			fmt.Fprintf(&b, " (reason %s)", quote(e.By.Reason))
		}
	case data.KindTakenOver:
		fmt.Fprintf(&b, " by run %s (%s, fence %d)", e.By.RunID, quote(e.By.Holder), e.By.Fence)
	case data.KindPreempted:
		fmt.Fprintf(&b, " by run %s (%s, fence %d, login %s", e.By.RunID, quote(e.By.Holder), e.By.Fence, quote(e.By.Actor))
		if e.By.Reason != "" {
			fmt.Fprintf(&b, ", reason %s", quote(e.By.Reason))
		}
		b.WriteString(")")
	case data.KindHandedOver:
		fmt.Fprintf(&b, " to run %s (%s, fence %d)", e.By.RunID, quote(e.By.Holder), e.By.Fence)
	}
	if e.Last != nil {
		fmt.Fprintf(&b, "; last renewal error: %v", e.Last)
	}
	return b.String()
}

// ended is a cause of loss the database told: it reads as what happened
// ("preempted"), not as a refused renewal, which it need not have been (the
// holder watch reads the row), and it wraps ErrRejected.
type ended struct{ what string }

func (e *ended) Error() string { return e.what }

// Unwrap makes errors.Is(e, ErrRejected) true.
func (e *ended) Unwrap() error { return ErrRejected }

// Unwrap makes errors.Is(err, ErrLost) and errors.Is(err, e.Reason) (and
// what Reason wraps) true.
func (e *LostError) Unwrap() []error { return []error{ErrLost, e.Reason} }
