package data

import (
	"crypto/sha256"

	"github.com/google/uuid"
)

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
	sum := sha256.Sum256(secret[:])
	var id uuid.UUID
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant
	return id
}
