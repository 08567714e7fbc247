package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
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
func stateText(d *monitor.Device, serverNow time.Time) (string, tone) {
	key := sessionText(d, d.Key)
	switch d.State {
	case monitor.DeviceStarting:
		return "starting", toneDim
	case monitor.DeviceRestarting:
		return joinWhy("restarting", d.Why), toneWarn
	case monitor.DeviceIdle:
		return "idle", toneDim
	case monitor.DeviceTrying:
		return "trying " + key, tonePlain
	case monitor.DeviceHolding:
		return parenWhy(fmt.Sprintf("holding %s run %s fence %d", key, shortRun(d.Run), d.Fence), d.Why), toneOK
	case monitor.DeviceRefused, monitor.DeviceWaiting:
		if d.AccountSlots > 0 { // the conversation was free: its account is at its limit
			return accountText(d, serverNow, key), toneWarn
		}
	}
	switch d.State {
	case monitor.DeviceRefused:
		return parenWhy(fmt.Sprintf("refused %s, %s: %s", key, leftText(d.OwnerExpires.Sub(serverNow)), ownerText(d.Owner)), d.Why), toneWarn
	case monitor.DeviceWaiting:
		return parenWhy(fmt.Sprintf("waiting %s for %s: %s", compact(serverNow.Sub(d.Since)), key, ownerText(d.Owner)), d.Why), toneWarn
	case monitor.DeviceAsking:
		return fmt.Sprintf("asked %s to hand over %s (%s)", ownerText(d.Owner), key, leftText(d.OwnerExpires.Sub(serverNow))), toneWarn
	case monitor.DeviceHandedOver:
		return fmt.Sprintf("handed %s over to %s: run %s", key, ownerText(d.Owner), shortRun(d.Run)), toneOK
	case monitor.DeviceQueued:
		return parenWhy(fmt.Sprintf("queued %s for %s: place %d behind %s", compact(serverNow.Sub(d.Since)), key, d.Place, ownerText(d.Owner)), d.Why), toneWarn
	case monitor.DevicePreempting:
		return fmt.Sprintf("preempting %s: new message, stopping %s", key, ownerText(d.Owner)), toneWarn
	case monitor.DevicePreempted:
		return fmt.Sprintf("preempted by %s: %s run %s", ownerText(d.Owner), key, shortRun(d.Run)), toneBad
	case monitor.DeviceFollowing:
		return parenWhy(fmt.Sprintf("following %s's run %s in %s", ownerText(d.Owner), shortRun(d.Run), key), d.Attachment), toneOK
	case monitor.DeviceFrozen:
		return parenWhy("frozen "+compact(serverNow.Sub(d.Since)), d.Why), toneBad
	case monitor.DeviceCancelled:
		return fmt.Sprintf("cancelled by %s: %s run %s", ownerText(d.Owner), key, shortRun(d.Run)), toneWarn
	case monitor.DeviceLost:
		return joinWhy("lost "+key, d.Why), toneBad
	case monitor.DeviceKilled:
		return joinWhy("killed "+compact(serverNow.Sub(d.Since))+" ago", d.Why), toneBad
	case monitor.DeviceStopped:
		return "stopped", toneDim
	}
	return clean(string(d.State), 16), tonePlain
}

// accountText is a device refused, or waiting, because its account was at
// its limit while the conversation was free: "waiting 1.2s for account
// acme (1/1): chat-2".
func accountText(d *monitor.Device, serverNow time.Time, key string) string {
	what := fmt.Sprintf("account %s (%d/%d)", clean(d.Account, 20), d.AccountUsed, d.AccountSlots)
	if d.State == monitor.DeviceWaiting {
		return fmt.Sprintf("waiting %s for %s: %s", compact(serverNow.Sub(d.Since)), what, key)
	}
	return fmt.Sprintf("refused %s: %s at its limit", key, what)
}

// sentText says what message d last sent and where it landed: "steer
// chat-1 → acked by 1a2b3c4d", "cancel chat-2 → carried to 5e6f7a8b", or "".
func sentText(d *monitor.Device) (string, tone) {
	m := d.Sent
	if m == nil {
		return "", toneDim
	}
	s := clean(string(m.Kind), 8) + " " + sessionText(d, m.Key) + " → "
	switch m.Where {
	case data.MessageDelivered:
		if m.Carried {
			return s + "carried to " + shortRun(m.Run), toneWarn
		}
		return s + "delivered to " + shortRun(m.Run), tonePlain
	case data.MessageAcked:
		if m.Carried {
			return s + "acked by " + shortRun(m.Run) + " (carried)", toneOK
		}
		return s + "acked by " + shortRun(m.Run), toneOK
	case data.MessageExpired:
		return s + "expired", toneBad
	}
	return s + "waiting for a run", tonePlain
}

// sessionText names a session on d's row: the session alone in d's own
// account (the row names the account), account/session otherwise.
func sessionText(d *monitor.Device, k data.Key) string {
	if k.Account == d.Account {
		return clean(k.Session, 24)
	}
	return keyText(monitor.Key{Key: k}, 24)
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

// busyText counts what a device did when a conversation was busy, or "".
func busyText(d monitor.Device) string {
	var parts []string
	for _, c := range []struct {
		n          int
		one, other string
	}{
		{d.Preempts, "1 preempt", "%d preempts"},
		{d.Preempted, "preempted once", "preempted %d times"},
		{d.Joins, "1 join", "%d joins"},
		{d.QueueWaits, "1 queue wait", "%d queue waits"},
		{d.HandOvers, "1 hand-over", "%d hand-overs"},
	} {
		switch {
		case c.n == 1:
			parts = append(parts, c.one)
		case c.n > 1:
			parts = append(parts, fmt.Sprintf(c.other, c.n))
		}
	}
	return strings.Join(parts, ", ")
}
