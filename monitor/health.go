package monitor

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// Link is the connection status the header shows.
type Link int

// Link values.
const (
	LinkConnecting   Link = iota // not yet listening
	LinkLive                     // listening; the picture is complete
	LinkReconnecting             // the connection was lost; retrying
	LinkDown                     // retrying for a while (DownAfter) or DownAttempts times
	LinkPoll                     // poll mode: reading lease.event every Health.Poll; the picture is complete
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
	case LinkPoll:
		return "POLL"
	default:
		return "DOWN"
	}
}

// Thresholds of Health.
const (
	DownAfter    = 5 * time.Second // reconnecting this long is DOWN
	DownAttempts = 3               // or failing this many attempts
	StaleAfter   = 3 * time.Second // "synced N s ago" turns red
	// NoAnswerAfter: a feed that reads the database every interval (one
	// second by default) and has had no answer for the interval plus this
	// long cannot reach it, whatever its listener says: the header leaves
	// LIVE (or POLL) for RECONNECTING, and DownAfter later for DOWN. A
	// listener finds a dead connection only when its ping goes unanswered
	// (5 s of silence, then 3 s); the reads notice within 2.5 s.
	NoAnswerAfter = 1500 * time.Millisecond
)

// defaultReadInterval is the read interval a State assumes before a batch
// has told it the feed's (FeedConfig.DeltaInterval's default).
const defaultReadInterval = time.Second

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
	// Poll is the poll interval once the feed polls (Link is LinkPoll, or
	// LinkReconnecting/LinkDown while polls fail), 0 while it listens.
	Poll time.Duration
	// PollReason says why it polls (a standby, a pooler without a listen
	// DSN, a LISTEN that failed or hears nothing, or on request).
	PollReason data.PollReason
	// Standby reports that the last read was served by a hot standby.
	Standby bool
	// ReplayLag is the standby's replay lag at now (now() -
	// pg_last_xact_replay_timestamp() on its clock), when LagKnown: a
	// standby that has replayed a commit.
	ReplayLag time.Duration
	LagKnown  bool
	// NoAnswer is how long the database has not answered the feed's
	// periodic reads, once that is longer than the read interval plus
	// NoAnswerAfter (0 before): the link is then RECONNECTING or DOWN
	// although the listener has not noticed yet.
	NoAnswer time.Duration
	// Clock is the server's clock as last measured (zero before).
	Clock data.Clock
	// RenewalsAge is how old the view of a renewal may be beyond the read
	// interval: the time the feed takes to read the whole lease table, a
	// slice a read (FeedConfig.SweepPages); 0 while a read reads it all.
	// Transitions are not delayed by it: they come as events.
	RenewalsAge time.Duration
}

// Health returns the connection's state at local time now (of the first
// context, in a State of several: HealthOf).
func (s *State) Health(now time.Time) Health { return s.HealthOf(0, now) }

// HealthOf returns the connection's state of context c at local time now.
func (s *State) HealthOf(c int, now time.Time) Health {
	m := &s.members[c]
	h := Health{Attempt: m.conn.Attempt, Err: m.conn.Err}
	switch m.conn.Status {
	case data.ListenerConnecting:
		h.Link = LinkConnecting
	case data.ListenerLive:
		h.Link = LinkLive
	case data.ListenerReconnecting:
		h.Link = LinkReconnecting
	case data.ListenerPolling:
		h.Link = LinkPoll
	default:
		h.Link = LinkDown
	}
	h.Poll, h.PollReason = m.conn.Poll, m.conn.Reason
	h.Standby = m.recovery.Standby
	if !m.clock.IsZero() {
		h.ReplayLag, h.LagKnown = m.recovery.Lag(m.clock.At(now))
	}
	if h.Link == LinkConnecting || h.Link == LinkReconnecting {
		if m.conn.Attempt >= DownAttempts || (!m.conn.Since.IsZero() && now.Sub(m.conn.Since) > DownAfter) {
			h.Link = LinkDown
		}
	}
	if (h.Link == LinkLive || h.Link == LinkPoll) && !m.syncedAt.IsZero() {
		every := m.readInterval
		if every <= 0 {
			every = defaultReadInterval
		}
		if silent := now.Sub(m.syncedAt); silent > every+NoAnswerAfter {
			h.NoAnswer, h.Link = silent, LinkReconnecting
			if silent > every+NoAnswerAfter+DownAfter {
				h.Link = LinkDown
			}
		}
	}
	if h.Err == nil {
		h.Err = m.readErr
	}
	if m.syncedAt.IsZero() {
		h.Stale = true
	} else {
		h.SyncedAgo = max(now.Sub(m.syncedAt), 0)
		h.Stale = h.SyncedAgo > StaleAfter
	}
	h.Clock = m.clock
	h.RenewalsAge = m.renewalsAge
	return h
}
