package data

import (
	"time"

	impl "github.com/leasetop/leasetop/internal/data"
)

// Event is one row of lease.event (or a "renewed" notification, ID 0).
// Zero values stand for SQL NULL. RunID and PrevRunID are public run ids
// (PublicRunID).
type Event = impl.Event

// Kind is the kind of an ownership transition in lease.event.
type Kind = impl.Kind

// Kinds returns every kind an event row can have, ownership transitions
// first: the one list of them, which the exporter's counters and the CLI's
// --kind derive from. KindRenewed is only ever a notification and is not
// among them.
func Kinds() []Kind {
	return impl.Kinds()
}

// The kinds of event. KindRenewed is only ever a notification (when renewal
// notifications are enabled), never an event row.
const (
	KindAcquired      = impl.KindAcquired
	KindTakenOver     = impl.KindTakenOver
	KindReleased      = impl.KindReleased
	KindForceReleased = impl.KindForceReleased
	KindRenewRejected = impl.KindRenewRejected
	KindTruncated     = impl.KindTruncated
	KindRenewed       = impl.KindRenewed
	// KindPreempted: a member of lease_preempt took the lease from an
	// unexpired holder (Store.Preempt). Like KindTakenOver it names both
	// runs, and also the victim's label (PrevHolder), the preemptor's login
	// (Actor) and its Reason.
	KindPreempted = impl.KindPreempted
	// The queue's (sql/queue.sql): a ticket taken, and a ticket ended
	// (Reason: granted, cancelled or expired). Not ownership transitions.
	KindQueueJoined = impl.KindQueueJoined
	KindQueueLeft   = impl.KindQueueLeft
	// The hand-over kinds (sql/handover.sql). Each names both runs: RunID
	// is the asker, PrevRunID the holder. Only KindHandedOver changes the
	// owner (like KindTakenOver, with both fences); the others carry the
	// ask's deadline in ExpiresAt and the asker's label in Holder.
	KindHandoverAsked    = impl.KindHandoverAsked
	KindHandedOver       = impl.KindHandedOver
	KindHandoverDeclined = impl.KindHandoverDeclined
	KindHandoverExpired  = impl.KindHandoverExpired
)

// Snapshot is every live lease with the server clock sampled in the same
// query.
type Snapshot = impl.Snapshot

// Sync is one consistent read of the lease table and the event history: a
// monitor's resync.
type Sync = impl.Sync

// Recovery is what a read learned about replication: whether the server is
// a hot standby, and when the last transaction it replayed committed on the
// primary.
type Recovery = impl.Recovery

// Clock maps local monotonic time onto the database server's clock. It is
// measured by reading clock_timestamp() between two local readings t0 and t1:
// the server's reading is taken to belong to the midpoint, with half the round
// trip as its uncertainty. Go's monotonic clock makes Now immune to jumps of
// the local wall clock.
type Clock = impl.Clock

// NewClock returns the Clock for a server reading taken between local times t0
// and t1.
func NewClock(server, t0, t1 time.Time) Clock {
	return impl.NewClock(server, t0, t1)
}

// PendingAsk is an ask to hand a session's lease over (lease.handover_ask):
// who asked, which holder it was addressed to, and until when.
type PendingAsk = impl.PendingAsk

// AskOutcome is what lease.ask_handover, hand_over or decline_handover
// answered (sql/handover.sql documents each).
type AskOutcome = impl.AskOutcome

// The outcomes.
const (
	AskAsked      = impl.AskAsked      // a new ask was recorded
	AskPending    = impl.AskPending    // this run's ask is pending; nothing written
	AskBusy       = impl.AskBusy       // another run's ask is pending: refused
	AskHandedOver = impl.AskHandedOver // the lease was handed to the asker
	AskDeclined   = impl.AskDeclined   // the holder declined
	AskExpired    = impl.AskExpired    // the ask passed its deadline (or its holder let go first)
	AskFree       = impl.AskFree       // nobody holds the lease: acquire it
	AskHeld       = impl.AskHeld       // the asker holds the lease itself
	AskNoAsk      = impl.AskNoAsk      // no ask is pending for this holder
	AskNotHeld    = impl.AskNotHeld    // the caller does not hold the lease
	// AskNotPreemptible: the holder declared that it must not be preempted,
	// so it may not be asked either; nothing written.
	AskNotPreemptible = impl.AskNotPreemptible
	// AskQueued: the session's queue has live tickets ahead of the asker
	// (AskAnswer.Ahead): an ask may not jump the queue; nothing written.
	AskQueued = impl.AskQueued
)

// Ticket is one live ticket of a session's queue (lease.queue_ticket).
type Ticket = impl.Ticket

// Locker is a transaction that holds a row locked. A lease's: a fence
// check's FOR SHARE (lease.check_fence), or an update of the row in
// progress; while it is open no takeover of the lease can commit, even after
// the lease expired: for an expired lease it is whom to end
// (pg_terminate_backend). Or the maintenance's (MaintainBusyError).
type Locker = impl.Locker

// Blocker is a session that holds a lock a migration waits for.
type Blocker = impl.Blocker

// SessionsQuery selects a page of the sessions of a window of the history,
// in (account, session) order, the database's: those that had a lease at
// some instant of [Since, Until), or an event in it. It is how the
// monitor's timeline finds its lanes: the sessions of the time it shows,
// ended or not, rather than the leases held now.
type SessionsQuery = impl.SessionsQuery
