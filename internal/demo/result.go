package demo

import (
	"fmt"

	"github.com/leasetop/leasetop/data"
)

// The invariants Check verifies, numbered as in the summary.
const (
	InvOneOwner   = 1 // never two unexpired owners of one session on the server clock
	InvFencesRise = 2 // fences rise per session
	InvNoStale    = 3 // no write with a stale fence was accepted
	InvRunsEnded  = 4 // every started run ended (released, lost, or killed)
	numInvariants = 4
)

// InvariantName returns what invariant n promises.
func InvariantName(n int) string {
	switch n {
	case InvOneOwner:
		return "never two unexpired owners of one session on the server clock"
	case InvFencesRise:
		return "fences rise per session"
	case InvNoStale:
		return "no write with a stale fence was accepted"
	case InvRunsEnded:
		return "every started run ended (released, lost, or killed)"
	}
	return fmt.Sprintf("invariant %d", n)
}

// Violation is one broken promise.
type Violation struct {
	Invariant int
	Key       data.Key // zero when it concerns no one session
	Detail    string
}

// String is the violation as one line: the session, then what went wrong.
func (v Violation) String() string {
	if v.Key == (data.Key{}) {
		return v.Detail
	}
	return v.Key.String() + ": " + v.Detail
}

// Tally counts what happened, from the database and the Record.
type Tally struct {
	RunsStarted            int // acquired + taken over
	Refusals               int
	Takeovers              int
	TakeoversAfterLoss     int // taken over from a run whose process the demo killed
	ZombieRenewalsRejected int
	StaleWritesRefused     int
	WritesAccepted         int
	Releases               int
	ForcedReleases         int
	// Chaos actions the demo performed: kill -9, SIGSTOP, force-release.
	Kills, Freezes, Forced int
}

// Result is the outcome of Check.
type Result struct {
	Tally      Tally
	Violations []Violation
}

// OK reports whether every invariant held.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// Failed returns the violations of invariant n.
func (r Result) Failed(n int) []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Invariant == n {
			out = append(out, v)
		}
	}
	return out
}
