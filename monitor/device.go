package monitor

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Device is one process of a system that holds leases, as it last reported
// itself (or, when it cannot speak, as the program that runs it says): the
// other half of the comparison CompareBeliefs makes with the server's
// leases. Times are on the server's clock. Text fields are untrusted: a
// view cleans them.
type Device struct {
	// Account is the account its user is signed in to; Name says which
	// device it is (desktop, browser, phone); PID is its process.
	Account string
	Name    string
	PID     int
	// Holder is the holder label its leases carry: the server's leases it
	// holds are found by it.
	Holder string
	State  DeviceState
	// Since is when it entered State.
	Since time.Time
	// Key is the session State is about (trying, holding, refused,
	// waiting, lost), with Run and Fence when it had a run.
	Key   data.Key
	Run   uuid.UUID
	Fence int64
	// Owner is the holder label of the run that has Key (refused,
	// waiting); OwnerExpires is when that lease expires, as the refusal
	// said.
	Owner        string
	OwnerExpires time.Time
	// Why says why it lost Key, or how it died; why it waits; for a run it
	// holds, a note (paying: not preemptible; whom it preempted).
	Why string
	// Attachment is the stream of the run it follows (following), or its
	// own run publishes (holding).
	Attachment string
	// Place is its place in Key's queue (queued): 1 is next.
	Place int
	// AccountSlots and AccountUsed: Key was free but its account was at its
	// limit (refused, waiting): AccountUsed of AccountSlots live runs.
	AccountSlots, AccountUsed int
	// Sent is the last message it sent, and where it landed; nil when it
	// sent none.
	Sent *SentMessage
	// Believes are the runs it believes it holds.
	Believes []Belief
	// Counters since the process started.
	Runs, Refusals, WritesAccepted, WritesRefused int
	// Preempts: runs it preempted; Preempted: its runs others preempted;
	// Joins: runs it followed instead of starting one; QueueWaits: its
	// turns in a queue; HandOvers: runs handed over to it or by it.
	Preempts, Preempted, Joins, QueueWaits, HandOvers int
	// Reported is when it last reported.
	Reported time.Time
}

// SentMessage is a message a device sent to a conversation (a steer or a
// cancel) and where it is now.
type SentMessage struct {
	Key  data.Key
	Kind data.MessageKind
	ID   int64
	// To is the holder label of the run that held Key when it was sent.
	To string
	// Where is sent (not delivered yet), delivered, acked or expired (a
	// data.MessageState), with the run it was delivered to or acknowledged
	// by (Run, Fence); Carried when that is not the run it was sent to.
	Where   data.MessageState
	Run     uuid.UUID
	Fence   int64
	Carried bool
	// Since is when it got Where.
	Since time.Time
}

// Belief is a run a device believes it holds.
type Belief struct {
	Key   data.Key
	Run   uuid.UUID
	Fence int64
	// Since is when the run was granted.
	Since time.Time
}
