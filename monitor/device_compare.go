package monitor

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Verdict is how what a device believes it holds compares with the
// server's leases.
type Verdict int

// The verdicts of CompareBeliefs.
const (
	// VerdictNothing: the device believes it holds nothing and the server
	// gives it nothing (or, dead, it held nothing).
	VerdictNothing Verdict = iota
	// VerdictAgree: every run it believes it holds is the server's live
	// lease, and the server gives it no other.
	VerdictAgree
	// VerdictNotYet: they disagree in a way the device's next report may
	// settle: what the server changed happened after its last report, and
	// it has not been silent too long.
	VerdictNotYet
	// VerdictMismatch: they disagree and the device cannot simply be
	// behind: the server's side was so before its last report, it has been
	// silent too long (frozen, say), or it died with the server still
	// giving its run a lease.
	VerdictMismatch
	// VerdictRepaired: the device died believing it held Key, and the
	// server has since let the lease go (Gap says to whom).
	VerdictRepaired
)

// Gap is what the server says where a device's belief and the server
// differ.
type Gap int

// The gaps of a Comparison.
const (
	// GapNone: no difference (VerdictNothing, VerdictAgree).
	GapNone Gap = iota
	// GapExpired: the device's run still has Key's lease, expired.
	GapExpired
	// GapTaken: another run holds Key (Lease).
	GapTaken
	// GapFree: nobody holds Key.
	GapFree
	// GapStillHeld: the dead device's run still has Key's lease.
	GapStillHeld
	// GapUnbelieved: the server gives the device a lease (Key, Lease) it
	// does not believe it holds.
	GapUnbelieved
)

// Comparison is what CompareBeliefs found: the verdict and, for a
// disagreement, the first one found.
type Comparison struct {
	Verdict Verdict
	// Dead: the device was killed, so the comparison is about what it
	// died holding.
	Dead bool
	// Gap, Key and Lease describe the disagreement: which session, and the
	// server's lease for it when there is one.
	Gap   Gap
	Key   data.Key
	Lease data.Lease
	// Agreed are the sessions both sides agree it holds (VerdictAgree);
	// Lease is then the first one's.
	Agreed []data.Key
}

// CompareBeliefs compares what d believes it holds with the server's
// leases at serverNow: lease looks a session's lease up, held are the
// leases with d's holder label. A disagreement is a mismatch only when d's
// report cannot simply be behind the server: the server's side was so
// before d's last report, or d has been silent longer than silent (or is
// frozen). Otherwise it is VerdictNotYet, unless another disagreement is a
// mismatch. A dead device's beliefs are compared by what it died holding.
func CompareBeliefs(d *Device, lease func(data.Key) (data.Lease, bool), held []data.Lease, serverNow time.Time, silent time.Duration) Comparison {
	if d.State == DeviceKilled {
		return diedHolding(d, lease, held)
	}
	stale := serverNow.Sub(d.Reported) > silent || d.State == DeviceFrozen
	var agreed Comparison
	var pending *Comparison
	// note records a disagreement: a mismatch is returned; the first that
	// may be a report not made yet is kept in pending.
	note := func(c Comparison, changed time.Time) *Comparison {
		if stale || (!changed.IsZero() && changed.Before(d.Reported)) {
			c.Verdict = VerdictMismatch
			return &c
		}
		if pending == nil {
			c.Verdict = VerdictNotYet
			pending = &c
		}
		return nil
	}
	for _, b := range d.Believes {
		l, ok := lease(b.Key)
		var c *Comparison
		switch {
		case ok && l.RunID == b.Run && l.ExpiresAt.After(serverNow):
			if len(agreed.Agreed) == 0 {
				agreed.Lease = l
			}
			agreed.Agreed = append(agreed.Agreed, b.Key)
		case ok && l.RunID == b.Run:
			c = note(Comparison{Gap: GapExpired, Key: b.Key, Lease: l}, l.ExpiresAt)
		case ok:
			c = note(Comparison{Gap: GapTaken, Key: b.Key, Lease: l}, l.AcquiredAt)
		default:
			c = note(Comparison{Gap: GapFree, Key: b.Key}, time.Time{})
		}
		if c != nil {
			return *c
		}
	}
	for _, l := range held {
		if !believed(d.Believes, l.RunID) {
			if c := note(Comparison{Gap: GapUnbelieved, Key: l.Key, Lease: l}, l.AcquiredAt); c != nil {
				return *c
			}
		}
	}
	switch {
	case pending != nil:
		return *pending
	case len(agreed.Agreed) > 0:
		agreed.Verdict = VerdictAgree
		return agreed
	}
	return Comparison{Verdict: VerdictNothing}
}

// diedHolding is CompareBeliefs for a dead device: a lease the server
// still gives its dead run is the gap until it expires (a mismatch); one
// another run took, or nobody holds, is the server's repair.
func diedHolding(d *Device, lease func(data.Key) (data.Lease, bool), held []data.Lease) Comparison {
	for _, l := range held {
		if !believed(d.Believes, l.RunID) {
			return Comparison{Verdict: VerdictMismatch, Dead: true, Gap: GapUnbelieved, Key: l.Key, Lease: l}
		}
	}
	for _, b := range d.Believes {
		switch l, ok := lease(b.Key); {
		case ok && l.RunID == b.Run:
			return Comparison{Verdict: VerdictMismatch, Dead: true, Gap: GapStillHeld, Key: b.Key, Lease: l}
		case ok:
			return Comparison{Verdict: VerdictRepaired, Dead: true, Gap: GapTaken, Key: b.Key, Lease: l}
		default:
			return Comparison{Verdict: VerdictRepaired, Dead: true, Gap: GapFree, Key: b.Key}
		}
	}
	return Comparison{Verdict: VerdictNothing, Dead: true}
}

// believed reports whether run is one of bs.
func believed(bs []Belief, run uuid.UUID) bool {
	for _, b := range bs {
		if b.Run == run {
			return true
		}
	}
	return false
}
