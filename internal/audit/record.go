package audit

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Record is what the holders' side knows that the database cannot: what the
// holders said and what was done to them (the demo's devices and chaos, or a
// fault test's holders and faults). Check uses it beside the database.
type Record struct {
	// Accounts scopes the check to these accounts.
	Accounts []string
	// AfterEventID: only events with a larger id belong to this history
	// (0: all).
	AfterEventID int64
	// Started holds every run a holder reported it started.
	Started map[uuid.UUID]StartedRun
	// Ended says how each run a holder started ended: EndReleased and
	// EndLost from the holder's own report, EndKilled when its process was
	// killed on purpose, or an EndCrashed... text when the process died by
	// itself.
	Ended map[uuid.UUID]string
	// Killed holds the holder labels of the processes killed on purpose
	// (kill -9): an unreleased lease with such a holder ended by process
	// loss.
	Killed map[string]bool
	// Frozen holds the holder labels of the processes frozen on purpose
	// (SIGSTOP past their TTL): a lease of theirs that expired and was
	// taken over was lost to the process's pause.
	Frozen map[string]bool
	// Refusals counts acquisitions refused because another run held the
	// session.
	Refusals int
	// PreemptsRefused counts preempts refused because the holder declared
	// it must not be preempted; Joins, runs a holder followed (read its
	// attachment) instead of starting one.
	PreemptsRefused, Joins int
	// FallbacksChosen and FallbacksRun count, per holder label, the
	// fallbacks a holder chose after an ask to hand over that did not get
	// the session (declined, expired), and those it then ran.
	FallbacksChosen, FallbacksRun map[string]int
	// StoppedAt is when, on the database clock, the holders were told to
	// stop: an ask still pending then was withdrawn, not left unended.
	StoppedAt time.Time
	// Limits are the accounts' limits of live runs (their own, pool "") in
	// force when the history began; its limit_set and limit_removed events
	// change them.
	Limits map[string]int
	// Acked holds, per message id, the runs whose holders said they
	// acknowledged it (their Ack returned nil, or a cancel stopped them).
	Acked map[int64][]AckedMessage
	// Kills, Freezes and ForcedReleases count the chaos actions performed.
	Kills, Freezes, ForcedReleases int
}

// StartedRun is a run a holder reported it started.
type StartedRun struct {
	Key    data.Key
	Fence  int64
	Holder string
}

// AckedMessage is a message a holder said its run acknowledged.
type AckedMessage struct {
	Key    data.Key
	Run    uuid.UUID // public run id
	Holder string
}

// How a run ended, in Record.Ended.
const (
	// EndReleased: the holder released it.
	EndReleased = "released"
	// EndLost: the holder found it lost (expired, taken over or
	// force-released) and stopped.
	EndLost = "lost"
	// EndKilled: the process that ran it was killed on purpose.
	EndKilled = "killed"
	// EndHandedOver: the holder handed it over to the run that asked for
	// it (lease.hand_over).
	EndHandedOver = "handed_over"
	// EndCrashed prefixes the end of a run whose process died by itself.
	EndCrashed = "crashed"
)

// NewRecord returns an empty Record for accounts, for the events after
// afterEventID.
func NewRecord(accounts []string, afterEventID int64) *Record {
	return &Record{
		Accounts:     accounts,
		AfterEventID: afterEventID,
		Started:      make(map[uuid.UUID]StartedRun),
		Ended:        make(map[uuid.UUID]string),
		Killed:       make(map[string]bool),
		Frozen:       make(map[string]bool),
		Acked:        make(map[int64][]AckedMessage),
		Limits:       make(map[string]int),

		FallbacksChosen: make(map[string]int),
		FallbacksRun:    make(map[string]int),
	}
}
