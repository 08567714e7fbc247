package data

import (
	impl "github.com/leasetop/leasetop/internal/data"
)

// ListenerConfig configures a Listener. Zero fields take the documented
// defaults.
type ListenerConfig = impl.ListenerConfig

// Listener delivers lease transitions to one consumer, on one channel
// (Deliveries) with one rule: it never waits for its consumer, and at most
// ListenerConfig.Buffer events wait for it. What it delivers, in order:
//
//   - a resync marker after every (re)connection, once it is listening (or
//     polling): the consumer then reads a snapshot and the events it missed,
//     so no transition is lost across an outage;
//   - notifications from lease_events, heard on a dedicated connection
//     (never a pool connection) through pgxlisten (FromNotify). When the
//     consumer has no room for one, it is dropped, counted (Dropped) and a
//     resync marker takes its place: the consumer gets one resync instead of
//     the notifications it could not take;
//   - rows of lease.event whose notification never came (FromCatchUp), and
//     in poll mode rows of lease.event instead of notifications (FromPoll).
//     Rows are never dropped: their reader waits until there is room.
//
// Notifications may repeat what a resync read returned, and the catch-up
// what a notification said; consumers de-duplicate by event id. Malformed
// payloads are counted and dropped, never fatal. Any role that may connect
// can NOTIFY, so a notification is only a claim: a "truncated" one is
// delivered like any other event, and the consumer reads it back
// (ReadBack) before it acts on it (monitor.Feed resyncs only for a
// truncated row that lease.event really holds). A notification naming an
// event behind the listener's reading position (committed before the
// connection listened, or delivered already) is not delivered at all
// (Repeated): an old id sent again is no news to any consumer.
//
// A new connection counts as live only once it has heard its own ping. When
// listening cannot work (a hot standby, the store's own connection through
// a pooler, found before any LISTEN, a LISTEN error, a connection that
// never hears its ping) the listener switches to poll mode for good and says
// why in State; then it delivers rows of lease.event, read by id, every
// transition exactly once.
type Listener = impl.Listener

// ListenerState is a listener's connection state.
type ListenerState = impl.ListenerState

// ListenerStatus is a listener's connection status.
type ListenerStatus = impl.ListenerStatus

// Listener statuses.
const (
	ListenerConnecting   = impl.ListenerConnecting   // first connection attempt
	ListenerLive         = impl.ListenerLive         // listening; every transition from now on is delivered
	ListenerReconnecting = impl.ListenerReconnecting // connection lost or refused (or, polling, a poll failed); retrying
	ListenerStopped      = impl.ListenerStopped      // Run returned
	ListenerPolling      = impl.ListenerPolling      // poll mode: reading lease.event every Poll; every transition is delivered
)

// PollReason is why a listener polls: a cause, and the server's message
// (untrusted text) or the ping's timeout where there is one.
type PollReason = impl.PollReason

// PollCause says why a listener polls.
type PollCause = impl.PollCause

// Poll causes.
const (
	PollNone         = impl.PollNone         // it listens
	PollRequested    = impl.PollRequested    // poll mode was asked for (ListenerConfig.Poll, Options.Poll)
	PollStandby      = impl.PollStandby      // the server is a hot standby: no LISTEN, no NOTIFY there
	PollListenFailed = impl.PollListenFailed // the server refused LISTEN
	PollNoDelivery   = impl.PollNoDelivery   // a new listen connection did not hear its own ping
	PollPooler       = impl.PollPooler       // the store's own connection goes through a pooler, and no listen DSN was given
)
