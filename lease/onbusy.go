package lease

import (
	"fmt"

	"github.com/leasetop/leasetop/internal/data"
)

// OnBusy is what a run does when another run holds the lease it wants: the
// one busy strategy of the library, of leasetop run's --on-busy and --then,
// and of the demo's devices, spelled everywhere as String spells it.
type OnBusy int

// The busy strategies. The zero value is BusyRefuse.
const (
	// BusyRefuse gives up at once: one attempt (Client.Try), ErrHeld when
	// another run holds the lease.
	BusyRefuse OnBusy = iota
	// BusyWait waits until the lease is free, in no particular order
	// (Client.Wait).
	BusyWait
	// BusyQueue takes a ticket in the session's queue and is granted the
	// lease in turn (Client.Queue).
	BusyQueue
	// BusyPreempt takes the lease from its holder now (Client.Preempt; a
	// privilege: lease_preempt, and refused when the holder is not
	// preemptible).
	BusyPreempt
	// BusyJoin follows the holder's run (its Attachment) instead of
	// starting one: the program's own business, which the library does not
	// do for it (Do and AskOptions refuse it).
	BusyJoin
	// BusyAsk asks the holder to hand the lease over (Client.AskWith).
	BusyAsk
	// BusySteer sends the holder's run a message (Client.Send, a
	// SteerMessage) instead of starting one: like BusyJoin, the program's
	// own business (Do and AskOptions refuse it).
	BusySteer
)

// busyNames are the strategies' names, in the order of their values.
var busyNames = [...]string{"refuse", "wait", "queue", "preempt", "join", "ask", "steer"}

// BusyStrategies returns every busy strategy, in the order of their values.
func BusyStrategies() []OnBusy {
	out := make([]OnBusy, len(busyNames))
	for i := range out {
		out[i] = OnBusy(i)
	}
	return out
}

// String returns b's name: refuse, wait, queue, preempt, join, ask or steer.
func (b OnBusy) String() string {
	if b < 0 || int(b) >= len(busyNames) {
		return fmt.Sprintf("OnBusy(%d)", int(b))
	}
	return busyNames[b]
}

// ParseOnBusy parses a strategy's name (String). Anything else is an
// *data.InputError.
func ParseOnBusy(s string) (OnBusy, error) {
	for i, name := range busyNames {
		if s == name {
			return OnBusy(i), nil
		}
	}
	return 0, &data.InputError{Field: "busy strategy", Problem: "must be refuse, wait, queue, preempt, join, ask or steer"}
}

// MarshalText returns b's name, so that a strategy reads the same in JSON
// as on the command line.
func (b OnBusy) MarshalText() ([]byte, error) {
	if b < 0 || int(b) >= len(busyNames) {
		return nil, fmt.Errorf("lease.OnBusy(%d) has no name", int(b))
	}
	return []byte(b.String()), nil
}

// UnmarshalText parses a name (ParseOnBusy).
func (b *OnBusy) UnmarshalText(text []byte) error {
	v, err := ParseOnBusy(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Mode is OnBusy.
//
// Deprecated: use OnBusy.
type Mode = OnBusy

// Try is BusyRefuse.
//
// Deprecated: use BusyRefuse.
const Try = BusyRefuse

// Wait is BusyWait.
//
// Deprecated: use BusyWait.
const Wait = BusyWait

// Then is OnBusy: an ask's fallback is one of the busy strategies.
//
// Deprecated: use OnBusy.
type Then = OnBusy

// The fallbacks of an ask, by their former names.
const (
	// ThenRefuse is BusyRefuse.
	//
	// Deprecated: use BusyRefuse.
	ThenRefuse = BusyRefuse
	// ThenQueue is BusyQueue.
	//
	// Deprecated: use BusyQueue.
	ThenQueue = BusyQueue
	// ThenPreempt is BusyPreempt.
	//
	// Deprecated: use BusyPreempt.
	ThenPreempt = BusyPreempt
)

// ParseThen parses refuse, queue or preempt: an ask's fallbacks.
//
// Deprecated: use ParseOnBusy and check that the strategy is a fallback
// (AskOptions.Then).
func ParseThen(s string) (OnBusy, error) {
	b, err := ParseOnBusy(s)
	if err != nil || !b.AskFallback() {
		return 0, &data.InputError{Field: "then", Problem: "must be refuse, queue or preempt"}
	}
	return b, nil
}

// AskFallback reports whether b may be an ask's fallback (AskOptions.Then):
// refuse, queue or preempt.
func (b OnBusy) AskFallback() bool {
	return b == BusyRefuse || b == BusyQueue || b == BusyPreempt
}
