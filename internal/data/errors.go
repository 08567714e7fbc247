package data

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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

func (e *HeldError) Error() string { return e.Describe(verbatim, strconv.Quote) }

// verbatim is Describe's text function for a message that is not shown on
// a terminal as it is.
func verbatim(s string) string { return s }

// Describe words the refusal in one line: who holds the lease and for how
// long, whether it may be preempted, what it published, the queue ahead and
// a pending ask to hand over. Every text read from the database goes through
// text (the key, shown bare) or quote (labels and the attachment, shown
// quoted), so a caller that shows the line on a terminal passes functions
// that make it inert (termtext.Mark and termtext.Quote); Error passes the
// text as it is and quotes with strconv.Quote.
func (e *HeldError) Describe(text, quote func(string) string) string {
	var b strings.Builder
	key := text(e.Key.String())
	switch {
	case e.RunID == uuid.Nil && e.Queued > 0:
		fmt.Fprintf(&b, "lease %s is free but reserved for its queue", key)
	case e.RunID == uuid.Nil:
		fmt.Fprintf(&b, "lease %s is held by another run", key)
	default:
		fmt.Fprintf(&b, "lease %s is held by run %s (%s) for %s more", key, e.RunID,
			quote(e.Holder), e.Remaining.Round(100*time.Millisecond))
		if !e.Preemptible {
			b.WriteString(", not preemptible")
		}
		if e.Attachment != "" {
			fmt.Fprintf(&b, ", attachment %s", quote(e.Attachment))
		}
	}
	if e.Queued > 0 {
		fmt.Fprintf(&b, " (queued: %d ahead)", e.Queued)
	}
	if e.Ask != nil {
		fmt.Fprintf(&b, "; run %s (%s) has asked it to hand over (%s left)", e.Ask.RunID,
			quote(e.Ask.Holder), e.Ask.Remaining.Round(100*time.Millisecond))
	}
	return b.String()
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

// NotifyError is what Options.OnNotifyError is given when a call
// committed but the notification the store sends after its commit did not
// go out (the connection broke between the two, or the role may not send
// it). The transition, if the call made one, stands: it is in lease.event,
// where every listener finds it when it next catches up
// (ListenerConfig.CatchUp), only later than a notification would have
// told it.
type NotifyError struct {
	Key Key   // the session whose transition was not notified
	Err error // why the notification was not sent
}

func (e *NotifyError) Error() string {
	return fmt.Sprintf("notify %s after its commit: %v (a transition it made stands: listeners read it from lease.event when they catch up)", e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *NotifyError) Unwrap() error { return e.Err }

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
