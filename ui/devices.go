package ui

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// DeviceSource feeds the devices pane: the processes of a system that holds
// leases, each as it reports itself (the demo's device processes report
// through a table of the demo's database). The pane shows what each one
// believes it holds beside what the server's lease table says, and flags
// where they disagree. A Config without ListFunc has no pane, and its help
// does not list the pane's key.
type DeviceSource struct {
	// ListFunc reads every device's latest report. It may block: the model
	// calls it inside a tea.Cmd, every Every.
	ListFunc func() ([]Device, error)
	// AttemptsFunc reads a device's recent attempts and the server's
	// answers, newest first, for its detail view (enter). Optional.
	AttemptsFunc func(d Device) ([]Attempt, error)
	// Every is how often the pane is read. Default 500 ms.
	Every time.Duration
	// Silent is how long a device may go without reporting before what the
	// server changed meanwhile counts as a mismatch rather than a report
	// not made yet. Default 3 s.
	Silent time.Duration
}

// DeviceState is what a device is doing: as it says itself, or, for
// starting, restarting, frozen and killed, as the program that runs it
// says (a frozen or dead process cannot speak).
type DeviceState string

// The states of a device.
const (
	// DeviceStarting: started, not reporting yet.
	DeviceStarting DeviceState = "starting"
	// DeviceRestarting: started again after its previous process died.
	DeviceRestarting DeviceState = "restarting"
	// DeviceIdle: connected, holding nothing, trying nothing.
	DeviceIdle DeviceState = "idle"
	// DeviceTrying: asking the server for Key.
	DeviceTrying DeviceState = "trying"
	// DeviceHolding: it holds Key with Run and Fence.
	DeviceHolding DeviceState = "holding"
	// DeviceRefused: the server refused Key: Owner holds it until
	// OwnerExpires.
	DeviceRefused DeviceState = "refused"
	// DeviceWaiting: it waits for Key, which Owner holds.
	DeviceWaiting DeviceState = "waiting"
	// DeviceFrozen: the process is stopped (SIGSTOP); it still believes
	// what it believed.
	DeviceFrozen DeviceState = "frozen"
	// DeviceLost: it lost Key's run; Why says how.
	DeviceLost DeviceState = "lost"
	// DeviceKilled: the process died; Why says how.
	DeviceKilled DeviceState = "killed"
	// DeviceStopped: it released what it held and exited.
	DeviceStopped DeviceState = "stopped"
)

// Device is one device process as the devices pane shows it. Times are on
// the server's clock. Text fields are untrusted: the pane cleans them.
type Device struct {
	// Account is the account its user is signed in to; Name says which
	// device it is (desktop, browser, phone); PID is its process.
	Account string
	Name    string
	PID     int
	// Holder is the holder label its leases carry: the pane finds the
	// leases the server says it holds by it.
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
	// Why says why it lost Key, or how it died.
	Why string
	// Believes are the runs it believes it holds.
	Believes []Belief
	// Counters since the process started.
	Runs, Refusals, WritesAccepted, WritesRefused int
	// Reported is when it last reported.
	Reported time.Time
}

// Belief is a run a device believes it holds.
type Belief struct {
	Key   data.Key
	Run   uuid.UUID
	Fence int64
	// Since is when the run was granted.
	Since time.Time
}

// Attempt is one thing a device asked the server, with the answer.
type Attempt struct {
	// At is when, on the server's clock; PID is the process that asked.
	At  time.Time
	PID int
	Key data.Key
	// Action is what it asked: acquire, wait, renew, write, release (or
	// what was done to the process: signal).
	Action string
	Run    uuid.UUID
	Fence  int64
	// Answer is the server's answer as the device understood it; OK says
	// whether it was a yes.
	Answer string
	OK     bool
}
