package data

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Errors returned by Store methods; match them with errors.Is.
var (
	// ErrHeld: another run holds an unexpired lease. The error is a *HeldError
	// that names the holder.
	ErrHeld = errors.New("lease held by another run")
	// ErrNotHeld: the run does not hold an unexpired lease (Renew, fence checks).
	ErrNotHeld = errors.New("lease not held by this run")
	// ErrLocked: RenewMany skipped a renewal because another transaction
	// holds the lease's row (a fenced write's check_fence); nothing was
	// decided for it: renew it alone (Renew waits for the lock).
	ErrLocked = errors.New("lease row locked by another transaction; renew it alone")
	// ErrInvalid: an argument is out of its documented range. The error is an
	// *InputError or carries the server's message.
	ErrInvalid = errors.New("invalid input")
	// ErrSchema: the database lacks the lease schema or has another version.
	ErrSchema = errors.New("lease schema missing or at another version")
	// ErrNotPreemptible: Preempt was refused because the holder declared at
	// acquire that it must not be preempted; nothing was written. The error
	// is also an ErrHeld whose *HeldError names the holder.
	ErrNotPreemptible = errors.New("the holder must not be preempted")
)

// HeldError is the ErrHeld returned by Acquire: who holds the lease, and for
// how long still (on the database clock, when it was read).
type HeldError struct {
	Key       Key
	RunID     uuid.UUID // uuid.Nil if the lease was released before it could be read
	Holder    string
	Fence     int64
	Remaining time.Duration
	// Preemptible is false when the holder declared that it must not be
	// preempted (Preempt is then refused).
	Preemptible bool
	// Attachment is what the holder published, such as the id of the stream
	// its run writes to: a device may join that run instead of starting one.
	// Untrusted text.
	Attachment string
	// Queued is the number of live tickets in the session's queue ahead of
	// the caller (all of them, for a run without a ticket): while it is
	// above 0 the caller may not take the lease even when it is free
	// (RunID uuid.Nil).
	Queued int
	// Ask is the ask to hand over pending on the lease, if any: a second
	// asker is refused, told who asked and until when.
	Ask *PendingAsk
}

func (e *HeldError) Error() string {
	var msg string
	if e.RunID == uuid.Nil {
		msg = fmt.Sprintf("lease %s held by another run", e.Key)
		if e.Queued > 0 {
			msg = fmt.Sprintf("lease %s is free but reserved for the queue", e.Key)
		}
	} else {
		msg = fmt.Sprintf("lease %s held by run %s (%s) for %s more",
			e.Key, e.RunID, e.Holder, e.Remaining.Round(time.Millisecond))
	}
	if e.RunID != uuid.Nil && !e.Preemptible {
		msg += ", not preemptible"
	}
	if e.Queued > 0 {
		msg += fmt.Sprintf(" (queued: %d ahead)", e.Queued)
	}
	if e.Ask != nil {
		msg += fmt.Sprintf("; run %s (%s) asked it to hand over, %s left", e.Ask.RunID, e.Ask.Holder, e.Ask.Remaining.Round(time.Millisecond))
	}
	return msg
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// InputError is an ErrInvalid that names the bad argument.
type InputError struct {
	Field   string
	Problem string
}

func (e *InputError) Error() string { return e.Field + " " + e.Problem }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// SchemaError is the ErrSchema returned by Open and CheckSchema.
type SchemaError struct {
	Have, Want int // Have is 0 when the schema is missing
}

func (e *SchemaError) Error() string {
	switch {
	case e.Have == 0:
		return "database has no lease schema: run leasetop migrate"
	case e.Have < e.Want:
		return fmt.Sprintf("lease schema is at version %d, this leasetop needs %d: run leasetop migrate", e.Have, e.Want)
	default:
		return fmt.Sprintf("lease schema is at version %d, newer than this leasetop (%d): upgrade leasetop", e.Have, e.Want)
	}
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }
