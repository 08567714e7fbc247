package demo

import (
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// Record is what the demo knows that the database cannot: what the devices
// said and what the demo did to them. Check uses it beside the database.
type Record struct {
	// Accounts scopes the check to the demo's accounts.
	Accounts []string
	// AfterEventID: only events with a larger id belong to this demo (0: all).
	AfterEventID int64
	// Started holds every run a device reported it started.
	Started map[uuid.UUID]StartedRun
	// Ended says how each run a device started ended: EndReleased and
	// EndLost from the device's own report, EndKilled when the demo killed
	// its process, or an EndCrashed... text when the process died by itself.
	Ended map[uuid.UUID]string
	// Killed holds the holder labels of the processes the demo killed on
	// purpose (kill -9): an unreleased lease with such a holder ended by
	// process loss.
	Killed map[string]bool
	// Refusals counts acquisitions refused because another run held the
	// conversation.
	Refusals int
	// Kills, Freezes and ForcedReleases count the chaos actions performed.
	Kills, Freezes, ForcedReleases int
}

// StartedRun is a run a device reported it started.
type StartedRun struct {
	Key    data.Key
	Fence  int64
	Holder string
}

// Ways a run ends that only the demo knows.
const (
	// EndKilled: the demo killed the process that ran it.
	EndKilled = "killed"
	// EndCrashed prefixes the end of a run whose process died by itself.
	EndCrashed = "crashed"
)

// NewRecord returns an empty Record for accounts.
func NewRecord(accounts []string, afterEventID int64) *Record {
	return &Record{
		Accounts:     accounts,
		AfterEventID: afterEventID,
		Started:      make(map[uuid.UUID]StartedRun),
		Ended:        make(map[uuid.UUID]string),
		Killed:       make(map[string]bool),
	}
}
