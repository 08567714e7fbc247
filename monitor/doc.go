// Package monitor is the monitor's model of the database without any
// terminal: a State that mirrors lease.session_lease and the recent
// lease.event history, and a Feed that keeps it true.
//
// # Data flow
//
//	PostgreSQL ──NOTIFY──▶ data.Listener ──▶ Feed ──Batch──▶ State.Apply
//	           ◀──ReadSync / Changed (SELECT)──┘
//
// The Feed owns the listener and the periodic reads. It starts the listener
// first and reads nothing until the listener reports that it is LISTENing
// (its first resync marker); then it reads the leases and the events in one
// REPEATABLE READ transaction (data.Store.ReadSync). Every transition that
// commits after that read arrives as a notification, in commit order; every
// one before it is in the read. The same happens after every reconnection,
// so no ownership transition is missed across an outage.
//
// Where LISTEN cannot work (a hot standby, a transaction pooler without a
// listen DSN) or when asked to (data.ListenerConfig.Poll), the listener
// polls lease.event by id instead and the Feed takes its rows as they are
// (Feed.receiveRows); the header then says POLL (Health.Link LinkPoll, with Poll and
// PollReason), and Health.Standby and ReplayLag describe a standby.
//
// Renewals send no notification by default (a NOTIFY costs every renewal
// PostgreSQL's commit lock), so the Feed reads the leases renewed since its
// previous read once a second (data.Store.Changed). When renewal
// notifications are enabled it applies them as they come and reads only every
// few seconds, to measure the clock and prove the connection.
//
// # Never blocking
//
// The listener hands events to the Feed in batches on one channel, never
// waits for it, and holds at most ListenerConfig.Buffer events for it. The Feed appends what it reads or receives to a pending
// batch and never waits for its consumer: the consumer takes the whole
// batch with Next whenever it is ready. A consumer that falls too far behind
// loses the pending batch and gets a resync instead, so memory stays
// bounded.
//
// # Notifications are claims
//
// Any role that may connect can NOTIFY on lease_events. The Feed reads back
// the event rows its notifications name (and the leases renewal
// notifications name) and applies only what the database holds; it resyncs
// for a truncation only when lease.event holds that truncated row, and it
// starts at most one resync per FeedConfig.MinResyncInterval (default 1 s),
// so flooding the channel costs the database little.
//
// # Ids are not commit order
//
// Event ids come from a sequence, and a transaction can commit after another
// that drew a larger id. A resync therefore re-reads a window of ids below
// the highest one delivered and State ignores ids it has already seen, so a
// late-committing event is neither skipped nor shown twice.
//
// # Devices
//
// A program whose processes can say what they believe they hold (the demo's
// device processes, through its database) gives a DeviceSource: each
// process as a Device in a DeviceState, with the runs it believes it holds
// and the attempts it made. CompareBeliefs sets those beliefs against the
// server's leases in a State and judges each disagreement: a mismatch, or a
// report the device has not made yet. The ui package draws the verdict; the
// demo writes and reads the devices with no terminal code linked.
//
// # Headless use
//
// State has no terminal and no goroutines: a program that wants "the
// monitor's view" without a screen runs a Feed (Feed.Run) and applies what
// Feed.Next returns to a State (State.Apply), as the exporter does.
// leasetop's own tests do that through internal/testkit/monitortest, which adds a
// lock, waits, a batch hook and a pause; it is not part of this package.
package monitor
