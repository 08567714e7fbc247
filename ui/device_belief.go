package ui

import (
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// beliefView is what a device believes beside what the server says.
type beliefView struct {
	text string
	tone tone
}

// believes is what d believes beside the server's leases, as the pane
// words it (monitor.CompareBeliefs compares them): a mismatch is marked ✗,
// a disagreement that may be a report not made yet is dim and marked … .
func believes(d *monitor.Device, lease func(data.Key) (data.Lease, bool), held []data.Lease, serverNow time.Time, silent time.Duration) beliefView {
	c := monitor.CompareBeliefs(d, lease, held, serverNow, silent)
	if c.Dead {
		return diedText(d, c, serverNow)
	}
	switch c.Verdict {
	case monitor.VerdictAgree:
		agreed := make([]string, len(c.Agreed))
		for i, k := range c.Agreed {
			agreed[i] = sessionText(d, k)
		}
		return beliefView{text: "✓ holds " + strings.Join(agreed, ", ") + " · server: agrees, " + leftText(c.Lease.ExpiresAt.Sub(serverNow)), tone: toneOK}
	case monitor.VerdictNothing:
		return beliefView{text: "holds nothing · server: nothing", tone: toneDim}
	}
	var text string
	claim := "believes it holds " + sessionText(d, c.Key) + " · server: "
	switch c.Gap {
	case monitor.GapExpired:
		text = claim + "expired " + compact(serverNow.Sub(c.Lease.ExpiresAt)) + " ago"
	case monitor.GapTaken:
		text = claim + holderOf(c.Lease) + " since " + compact(serverNow.Sub(c.Lease.AcquiredAt))
	case monitor.GapFree:
		text = claim + "nobody holds it"
	case monitor.GapUnbelieved:
		text = "believes it holds nothing · server: it holds " + sessionText(d, c.Key) + ", " + leftText(c.Lease.ExpiresAt.Sub(serverNow))
	}
	if c.Verdict == monitor.VerdictMismatch {
		return beliefView{text: "✗ " + text, tone: toneBad}
	}
	return beliefView{text: "… " + text, tone: toneDim}
}

// diedText is believes for a dead device: a lease the server still gives
// its dead run is the gap until it expires (✗); one another run took is
// the server's repair.
func diedText(d *monitor.Device, c monitor.Comparison, serverNow time.Time) beliefView {
	claim := "died holding " + sessionText(d, c.Key) + " · server: "
	switch c.Gap {
	case monitor.GapUnbelieved:
		return beliefView{text: "✗ dead · server: it holds " + sessionText(d, c.Key) + ", " + leftText(c.Lease.ExpiresAt.Sub(serverNow)), tone: toneBad}
	case monitor.GapStillHeld:
		return beliefView{text: "✗ " + claim + "still its lease, " + leftText(c.Lease.ExpiresAt.Sub(serverNow)), tone: toneBad}
	case monitor.GapTaken:
		return beliefView{text: claim + holderOf(c.Lease) + " since " + compact(serverNow.Sub(c.Lease.AcquiredAt)), tone: toneDim}
	case monitor.GapFree:
		return beliefView{text: claim + "nobody holds it", tone: toneDim}
	}
	return beliefView{text: "held nothing · server: nothing", tone: toneDim}
}

// holderOf names a lease's holder for the pane.
func holderOf(l data.Lease) string {
	if l.Holder == "" {
		return "run " + shortRun(l.RunID)
	}
	return clean(l.Holder, 24)
}
