package data

import (
	"slices"
	"time"

	"github.com/google/uuid"
)

// Key names a session's lease: one conversation of one account.
type Key struct {
	Account string
	Session string
}

// String returns "account/session".
func (k Key) String() string { return k.Account + "/" + k.Session }

// Lease is one row of lease.session_lease.
type Lease struct {
	Key
	RunID      uuid.UUID // the holder's public run id (PublicRunID), never its secret
	Holder     string
	Fence      int64
	AcquiredAt time.Time
	RenewedAt  time.Time
	ExpiresAt  time.Time
	// NotPreemptible is true when the holder declared at acquire that it
	// must not be preempted (AcquireOptions.NotPreemptible). Negated so that
	// a Lease made from an event, which does not say, shows the default.
	NotPreemptible bool
	// Attachment is the text the holder published (AcquireOptions.Attachment,
	// SetAttachment), "" for none: no secret, readable like the rest of the
	// row, and untrusted text.
	Attachment string
	// Context names the database the lease was read from, in a monitor of
	// several (monitor.State sets it for the contexts it was given names
	// for); "" otherwise. The protocol never reads or sets it.
	Context string
}

// Grant is what Acquire returns: the lease a run now holds.
type Grant struct {
	RunID     uuid.UUID // the run's own (secret) id, as passed to Acquire
	Fence     int64
	ExpiresAt time.Time
}

// Kind is the kind of an ownership transition in lease.event.
type Kind string

// The kinds of event. KindRenewed is only ever a notification (when renewal
// notifications are enabled), never an event row.
const (
	KindAcquired      Kind = "acquired"
	KindTakenOver     Kind = "taken_over"
	KindReleased      Kind = "released"
	KindForceReleased Kind = "force_released"
	KindRenewRejected Kind = "renew_rejected"
	KindTruncated     Kind = "truncated"
	KindRenewed       Kind = "renewed"
	// KindPreempted: a member of lease_preempt took the lease from an
	// unexpired holder (Store.Preempt). Like KindTakenOver it names both
	// runs, and also the victim's label (PrevHolder), the preemptor's login
	// (Actor) and its Reason.
	KindPreempted Kind = "preempted"
	// The queue's (sql/queue.sql): a ticket taken, and a ticket ended
	// (Reason: granted, cancelled or expired). Not ownership transitions.
	KindQueueJoined Kind = "queue_joined"
	KindQueueLeft   Kind = "queue_left"

	// The hand-over kinds (sql/handover.sql). Each names both runs: RunID
	// is the asker, PrevRunID the holder. Only KindHandedOver changes the
	// owner (like KindTakenOver, with both fences); the others carry the
	// ask's deadline in ExpiresAt and the asker's label in Holder.
	KindHandoverAsked    Kind = "handover_asked"
	KindHandedOver       Kind = "handed_over"
	KindHandoverDeclined Kind = "handover_declined"
	KindHandoverExpired  Kind = "handover_expired"

	// The limits' kinds (sql/limits.sql). KindLimitSet and KindLimitRemoved
	// name the account (Key.Session is empty), the login (Actor) and the
	// pool and slots (Reason); KindLimitRefused names the run refused a
	// grant of its session because its account or pool was at its limit,
	// recorded once per run and session. None moves a lease.
	KindLimitSet     Kind = "limit_set"
	KindLimitRemoved Kind = "limit_removed"
	KindLimitRefused Kind = "limit_refused"

	// The inbox's kinds (sql/inbox.sql): a message sent to a conversation,
	// delivered to the run holding it, carried to the next holder after
	// its run ended without acknowledging it, acknowledged, or expired.
	// Each names its message (MessageID), its kind (Reason: steer or
	// cancel), the sender's label (Holder) and its expiry (ExpiresAt); RunID
	// and Fence the run it went to (message_sent: the holder when it was
	// sent, none when nobody held the conversation; message_expired: the
	// run it was last delivered to, if any), PrevRunID and PrevFence the run
	// it was carried from. None of them moves a lease.
	KindMessageSent      Kind = "message_sent"
	KindMessageDelivered Kind = "message_delivered"
	KindMessageCarried   Kind = "message_carried"
	KindMessageAcked     Kind = "message_acked"
	KindMessageExpired   Kind = "message_expired"
)

// Kinds returns every kind an event row can have, ownership transitions
// first: the one list of them, which the exporter's counters and the CLI's
// --kind derive from. KindRenewed is only ever a notification and is not
// among them.
func Kinds() []Kind {
	return []Kind{
		KindAcquired, KindTakenOver, KindReleased, KindForceReleased,
		KindRenewRejected, KindTruncated, KindPreempted, KindHandedOver,
		KindQueueJoined, KindQueueLeft,
		KindHandoverAsked, KindHandoverDeclined, KindHandoverExpired,
		KindLimitSet, KindLimitRemoved, KindLimitRefused,
		KindMessageSent, KindMessageDelivered, KindMessageCarried, KindMessageAcked, KindMessageExpired,
	}
}

// Message reports whether an event of this kind is one of the inbox's: it
// names a message (Event.MessageID) and moves no lease.
func (k Kind) Message() bool {
	switch k {
	case KindMessageSent, KindMessageDelivered, KindMessageCarried, KindMessageAcked, KindMessageExpired:
		return true
	}
	return false
}

// Valid reports whether k is one of the documented kinds: a row's (Kinds)
// or KindRenewed.
func (k Kind) Valid() bool { return k == KindRenewed || slices.Contains(Kinds(), k) }

// AccountWide reports whether an event of this kind is about a whole
// account: an operator's limit_set or limit_removed, which names no
// session and no run.
func (k Kind) AccountWide() bool { return k == KindLimitSet || k == KindLimitRemoved }

// Ends reports whether an event of this kind ends the lease row it names.
func (k Kind) Ends() bool { return k == KindReleased || k == KindForceReleased }

// Grants reports whether an event of this kind gives its session to a run:
// an acquire, a takeover, a preempt or a hand-over.
func (k Kind) Grants() bool {
	return k == KindAcquired || k == KindTakenOver || k == KindPreempted || k == KindHandedOver
}

// Event is one row of lease.event (or a "renewed" notification, ID 0).
// Zero values stand for SQL NULL. RunID and PrevRunID are public run ids
// (PublicRunID).
type Event struct {
	ID            int64
	At            time.Time
	Kind          Kind
	Key           Key
	RunID         uuid.UUID
	PrevRunID     uuid.UUID
	Fence         int64
	PrevFence     int64
	ExpiresAt     time.Time
	PrevExpiresAt time.Time
	Holder        string
	PrevHolder    string // the replaced run's label (preempted events)
	Actor         string
	Reason        string
	MessageID     int64 // the message of an inbox event (Kind.Message), 0 for the others
	// Context names the database the event was read from, in a monitor of
	// several (as Lease.Context); "" otherwise. Never read from a payload.
	Context string
}
