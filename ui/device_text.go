package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// tone is how a piece of the devices pane is coloured; each tone also
// reads as words (and the mismatch as a ✗), so the pane means the same
// without colour.
type tone int

const (
	toneDim tone = iota
	tonePlain
	toneOK
	toneWarn
	toneBad
)

// stateText says what a device is doing, at serverNow.
func stateText(d *Device, serverNow time.Time) (string, tone) {
	key := d.sessionText(d.Key)
	switch d.State {
	case DeviceStarting:
		return "starting", toneDim
	case DeviceRestarting:
		return joinWhy("restarting", d.Why), toneWarn
	case DeviceIdle:
		return "idle", toneDim
	case DeviceTrying:
		return "trying " + key, tonePlain
	case DeviceHolding:
		return fmt.Sprintf("holding %s run %s fence %d", key, shortRun(d.Run), d.Fence), toneOK
	case DeviceRefused:
		return fmt.Sprintf("refused %s, %s: %s", key, leftText(d.OwnerExpires.Sub(serverNow)), ownerText(d.Owner)), toneWarn
	case DeviceWaiting:
		return fmt.Sprintf("waiting %s for %s: %s", compact(serverNow.Sub(d.Since)), key, ownerText(d.Owner)), toneWarn
	case DeviceFrozen:
		return parenWhy("frozen "+compact(serverNow.Sub(d.Since)), d.Why), toneBad
	case DeviceLost:
		return joinWhy("lost "+key, d.Why), toneBad
	case DeviceKilled:
		return joinWhy("killed "+compact(serverNow.Sub(d.Since))+" ago", d.Why), toneBad
	case DeviceStopped:
		return "stopped", toneDim
	}
	return clean(string(d.State), 16), tonePlain
}

// sessionText names a session on d's row: the session alone in d's own
// account (the row names the account), account/session otherwise.
func (d *Device) sessionText(k data.Key) string {
	if k.Account == d.Account {
		return clean(k.Session, 24)
	}
	return keyText(k, 24)
}

func joinWhy(s, why string) string {
	if why == "" {
		return s
	}
	return s + ": " + clean(why, 60)
}

func parenWhy(s, why string) string {
	if why == "" {
		return s
	}
	return s + " (" + clean(why, 40) + ")"
}

func ownerText(owner string) string {
	if owner == "" {
		return "another run"
	}
	return clean(owner, 24)
}

// leftText is a lease's time left, or how long ago it expired.
func leftText(left time.Duration) string {
	if left > 0 {
		return compact(left) + " left"
	}
	return "expired " + compact(-left) + " ago"
}

// beliefView is what a device believes beside what the server says.
type beliefView struct {
	text string
	tone tone
}

// believes compares what d believes it holds with the server's leases
// (lease looks one up; held are those with d's holder label). A
// disagreement is a mismatch (✗) only when d's report cannot simply be
// behind the server: the server's side was so before d's last report, or d
// has been silent longer than silent (frozen, say). Otherwise it is shown
// dim, marked … : not reported yet.
func believes(d *Device, lease func(data.Key) (data.Lease, bool), held []data.Lease, serverNow time.Time, silent time.Duration) beliefView {
	if d.State == DeviceKilled {
		return diedHolding(d, lease, held, serverNow)
	}
	stale := serverNow.Sub(d.Reported) > silent || d.State == DeviceFrozen
	var agreed []string
	var firstLeft time.Duration
	var pending *beliefView
	note := func(text string, changed time.Time) *beliefView {
		if stale || (!changed.IsZero() && changed.Before(d.Reported)) {
			return &beliefView{text: "✗ " + text, tone: toneBad}
		}
		if pending == nil {
			pending = &beliefView{text: "… " + text, tone: toneDim}
		}
		return nil
	}
	for _, b := range d.Believes {
		l, ok := lease(b.Key)
		claim := "believes it holds " + d.sessionText(b.Key) + " · server: "
		var v *beliefView
		switch {
		case ok && l.RunID == b.Run && l.ExpiresAt.After(serverNow):
			if len(agreed) == 0 {
				firstLeft = l.ExpiresAt.Sub(serverNow)
			}
			agreed = append(agreed, d.sessionText(b.Key))
		case ok && l.RunID == b.Run:
			v = note(claim+"expired "+compact(serverNow.Sub(l.ExpiresAt))+" ago", l.ExpiresAt)
		case ok:
			v = note(claim+holderOf(l)+" since "+compact(serverNow.Sub(l.AcquiredAt)), l.AcquiredAt)
		default:
			v = note(claim+"nobody holds it", time.Time{})
		}
		if v != nil {
			return *v
		}
	}
	for _, l := range held {
		if !believed(d.Believes, l.RunID) {
			if v := note("believes it holds nothing · server: it holds "+d.sessionText(l.Key)+", "+leftText(l.ExpiresAt.Sub(serverNow)), l.AcquiredAt); v != nil {
				return *v
			}
		}
	}
	switch {
	case pending != nil:
		return *pending
	case len(agreed) > 0:
		return beliefView{text: "✓ holds " + strings.Join(agreed, ", ") + " · server: agrees, " + leftText(firstLeft), tone: toneOK}
	}
	return beliefView{text: "holds nothing · server: nothing", tone: toneDim}
}

// diedHolding is believes for a dead device: a lease the server still
// gives its dead run is the gap until it expires (✗); one another run took
// is the server's repair.
func diedHolding(d *Device, lease func(data.Key) (data.Lease, bool), held []data.Lease, serverNow time.Time) beliefView {
	for _, l := range held {
		if !believed(d.Believes, l.RunID) {
			return beliefView{text: "✗ dead · server: it holds " + d.sessionText(l.Key) + ", " + leftText(l.ExpiresAt.Sub(serverNow)), tone: toneBad}
		}
	}
	for _, b := range d.Believes {
		claim := "died holding " + d.sessionText(b.Key) + " · server: "
		switch l, ok := lease(b.Key); {
		case ok && l.RunID == b.Run:
			return beliefView{text: "✗ " + claim + "still its lease, " + leftText(l.ExpiresAt.Sub(serverNow)), tone: toneBad}
		case ok:
			return beliefView{text: claim + holderOf(l) + " since " + compact(serverNow.Sub(l.AcquiredAt)), tone: toneDim}
		default:
			return beliefView{text: claim + "nobody holds it", tone: toneDim}
		}
	}
	return beliefView{text: "held nothing · server: nothing", tone: toneDim}
}

func believed(bs []Belief, run uuid.UUID) bool {
	for _, b := range bs {
		if b.Run == run {
			return true
		}
	}
	return false
}

// holderOf names a lease's holder for the pane.
func holderOf(l data.Lease) string {
	if l.Holder == "" {
		return "run " + shortRun(l.RunID)
	}
	return clean(l.Holder, 24)
}
