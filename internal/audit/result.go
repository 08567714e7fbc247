package audit

import (
	"fmt"

	"github.com/leasetop/leasetop/internal/data"
)

// Invariant is one promise Check verifies, numbered as the demo's summary
// lists them.
type Invariant int

// The invariants Check verifies.
const (
	OneOwner     Invariant = 1 // never two unexpired owners of one session on the server clock
	FencesRise   Invariant = 2 // fences rise per session
	NoStaleWrite Invariant = 3 // no write with a stale fence was accepted
	RunsEnded    Invariant = 4 // every started run ended (released, lost, or killed)
	// ReplacedSilent: every preempted (or handed-over) run made no write
	// accepted after the fence that replaced it.
	ReplacedSilent Invariant = 5
	// QueueOrder: queues were served in order (no grant to a later ticket,
	// or to a run without one, while an earlier, live one waited).
	QueueOrder Invariant = 6
	// HandOverAtomic: every hand-over went from the run that held the
	// session to the run whose ask was pending, in one event: no third run
	// between them.
	HandOverAtomic Invariant = 7
	// AsksEnded: every ask to hand over ended (handed over, declined or
	// expired) and every fallback a holder chose after one ran.
	AsksEnded Invariant = 8
	// LimitKept: never more live runs of an account than its limit.
	LimitKept Invariant = 9
	// MessagesOnce: every message was acknowledged at most once, by the
	// run it was delivered to while that run held the conversation, or
	// expired (or still waited at the end).
	MessagesOnce Invariant = 10
)

// Invariants returns every invariant Check verifies, in order.
func Invariants() []Invariant {
	return []Invariant{OneOwner, FencesRise, NoStaleWrite, RunsEnded, ReplacedSilent, QueueOrder, HandOverAtomic, AsksEnded, LimitKept, MessagesOnce}
}

// String is what the invariant promises.
func (inv Invariant) String() string {
	switch inv {
	case OneOwner:
		return "never two unexpired owners of one session on the server clock"
	case FencesRise:
		return "fences rise per session"
	case NoStaleWrite:
		return "no write with a stale fence was accepted"
	case RunsEnded:
		return "every started run ended (released, lost, or killed)"
	case ReplacedSilent:
		return "every preempted or handed-over run made no write accepted after the fence that replaced it"
	case QueueOrder:
		return "queues were served in order (no grant while an earlier, live ticket waited)"
	case HandOverAtomic:
		return "every hand-over was atomic (from the holder to the asker, no third run between)"
	case AsksEnded:
		return "every ask ended (handed over, declined, expired) and every fallback ran"
	case LimitKept:
		return "never more holders of an account than its limit"
	case MessagesOnce:
		return "every message acknowledged exactly once, or expired, by the run that held the conversation when it was delivered"
	}
	return fmt.Sprintf("invariant %d", int(inv))
}

// Violation is one broken promise.
type Violation struct {
	Invariant Invariant
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
	RunsStarted int // acquired + taken over
	Refusals    int
	Takeovers   int
	// TakeoversAfterLoss counts the takeovers (taken_over: the lease had
	// expired) from a run whose process was killed or frozen on purpose
	// (Record.Killed, Record.Frozen). A preempt or a hand-over replaces an
	// unexpired lease, whoever held it: not counted.
	TakeoversAfterLoss     int
	Preempts               int // unexpired leases taken by lease.preempt
	PreemptsRefused        int // preempts refused: the holder was not preemptible
	Joins                  int // runs a holder followed instead of starting one
	QueueWaits             int // tickets taken in a queue (queue_joined)
	HandOvers              int // leases handed over to the run that asked (handed_over)
	ZombieRenewalsRejected int
	// LimitRefusals counts grants refused because the account was at its
	// limit (limit_refused: once per run and session).
	LimitRefusals int
	// The inbox's messages: sent, first delivered, carried to a next run,
	// acknowledged, expired, and neither acknowledged nor expired at the
	// end.
	MessagesSent, MessagesDelivered, MessagesCarried, MessagesAcked, MessagesExpired, MessagesWaiting int
	StaleWritesRefused                                                                                int
	WritesAccepted                                                                                    int
	Releases                                                                                          int
	ForcedReleases                                                                                    int
	// Chaos actions performed on the holders: kill -9, SIGSTOP,
	// force-release.
	Kills, Freezes, Forced int
}

// LimitPeak is a limited account's limit and the most live runs the
// history shows it holding at once.
type LimitPeak struct{ Slots, Peak int }

// Result is the outcome of Check.
type Result struct {
	Tally Tally
	// Limits are, per limited account, its limit and the most runs it
	// held at once.
	Limits     map[string]LimitPeak
	Violations []Violation
}

// OK reports whether every invariant held.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// Failed returns the violations of inv.
func (r Result) Failed(inv Invariant) []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Invariant == inv {
			out = append(out, v)
		}
	}
	return out
}
