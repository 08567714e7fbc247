package monitor

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

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
