package data

import (
	"time"

	"github.com/google/uuid"

	impl "github.com/leasetop/leasetop/internal/data"
)

// Key names a session's lease: one conversation of one account.
type Key = impl.Key

// Lease is one row of lease.session_lease.
type Lease = impl.Lease

// Grant is what Acquire returns: the lease a run now holds.
type Grant = impl.Grant

// PublicRunID returns the id everybody may see for the run whose own id is
// secret: the first 16 bytes of SHA-256 of its 16 bytes, as a version-8 UUID.
// It is lease.public_run_id's twin.
//
// A run calls Acquire, Renew, Release and CheckFence with its own id, which
// only it knows; lease.session_lease, lease.event and the notifications store
// and show the public id, which cannot be turned back into the secret. So
// reading the table lets nobody act as another run, and ForceRelease, the
// operator's call, takes the public id the monitor shows. The secret must be
// random (uuid.New), or the public id gives it away.
func PublicRunID(secret uuid.UUID) uuid.UUID {
	return impl.PublicRunID(secret)
}

// ValidateKey checks both ids: 1..512 bytes of UTF-8 without control
// characters, bidirectional formatting characters, line separators or
// invisible characters such as zero-width spaces (what termtext escapes and
// lease.safe_text refuses), so no two ids that differ look the same for want
// of a character that shows.
func ValidateKey(k Key) error {
	return impl.ValidateKey(k)
}

// ValidateHolder checks a holder label: at most 256 bytes of UTF-8 without
// control, bidirectional formatting or invisible characters.
func ValidateHolder(holder string) error {
	return impl.ValidateHolder(holder)
}

// ValidateReason checks a forced release's reason: at most 512 bytes of UTF-8
// without control, bidirectional formatting or invisible characters.
func ValidateReason(reason string) error {
	return impl.ValidateReason(reason)
}

// ValidateTTL checks 0 < ttl <= 24h.
func ValidateTTL(ttl time.Duration) error {
	return impl.ValidateTTL(ttl)
}

// Bounds enforced by the schema (and checked here first, for a clear error
// without a round trip).
const (
	MaxIDBytes     = impl.MaxIDBytes
	MaxHolderBytes = impl.MaxHolderBytes
	MaxReasonBytes = impl.MaxReasonBytes
	// MaxAttachmentBytes bounds a holder's attachment.
	MaxAttachmentBytes = impl.MaxAttachmentBytes
	MaxTTL             = impl.MaxTTL
)

// MaxAskTTL is the longest an ask to hand over may stay pending.
const MaxAskTTL = impl.MaxAskTTL

// QueueLimit is the most live tickets a session's queue holds
// (lease.queue_limit).
const QueueLimit = impl.QueueLimit

// QueueShare is the most live tickets one login may hold in a session's
// queue (lease.queue_share): half of QueueLimit, so that no login can fill
// a queue and shut every other login out of it.
const QueueShare = impl.QueueShare
