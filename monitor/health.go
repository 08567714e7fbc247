package monitor

import (
	"time"

	"github.com/leasetop/leasetop/data"
)

// Link is the connection status the header shows.
type Link int

// Link values.
const (
	LinkConnecting   Link = iota // not yet listening
	LinkLive                     // listening; the picture is complete
	LinkReconnecting             // the connection was lost; retrying
	LinkDown                     // retrying for a while (DownAfter) or DownAttempts times
)

// String returns the status as the header shows it.
func (l Link) String() string {
	switch l {
	case LinkConnecting:
		return "CONNECTING"
	case LinkLive:
		return "LIVE"
	case LinkReconnecting:
		return "RECONNECTING"
	default:
		return "DOWN"
	}
}

// Thresholds of Health.
const (
	DownAfter    = 5 * time.Second // reconnecting this long is DOWN
	DownAttempts = 3               // or failing this many attempts
	StaleAfter   = 3 * time.Second // "synced N s ago" turns red
)

// Health is the connection's state as the header shows it.
type Health struct {
	Link    Link
	Attempt int   // failed attempts while reconnecting
	Err     error // the last connection or read error
	// SyncedAgo is the time since the last successful read of the database
	// (0 before the first).
	SyncedAgo time.Duration
	// Stale reports that SyncedAgo exceeds StaleAfter, or that there was no
	// read yet.
	Stale bool
}

// Health returns the connection's state at local time now.
func (s *State) Health(now time.Time) Health {
	h := Health{Attempt: s.conn.Attempt, Err: s.conn.Err}
	switch s.conn.Status {
	case data.ListenerConnecting:
		h.Link = LinkConnecting
	case data.ListenerLive:
		h.Link = LinkLive
	case data.ListenerReconnecting:
		h.Link = LinkReconnecting
	default:
		h.Link = LinkDown
	}
	if h.Link == LinkConnecting || h.Link == LinkReconnecting {
		if s.conn.Attempt >= DownAttempts || (!s.conn.Since.IsZero() && now.Sub(s.conn.Since) > DownAfter) {
			h.Link = LinkDown
		}
	}
	if h.Err == nil {
		h.Err = s.readErr
	}
	if s.syncedAt.IsZero() {
		h.Stale = true
	} else {
		h.SyncedAgo = max(now.Sub(s.syncedAt), 0)
		h.Stale = h.SyncedAgo > StaleAfter
	}
	return h
}
