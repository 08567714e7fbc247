package data

import (
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// rawLeases decodes the lease columns of a snapshot row (leaseColumns, after
// the serverColumns) from the row's raw bytes, without pgx's per-value scan
// plans and the pointer each nullable column costs: at 1,000,000 leases
// rows.Scan was most of the monitor's first read. It decodes
// only the binary formats pgx asks for in the extended protocol; a read
// that returns another format (the simple protocol answers in text) or a
// value it does not take (a NULL, an infinite time) goes to rows.Scan, which
// stays the one definition of what a value means.
//
// The texts many leases share (accounts, holder labels, attachments) are
// made strings once: a lease then costs one string allocation, its session.
type rawLeases struct {
	ok     bool // every lease column has a type and format decode knows
	shared map[string]string
}

// leaseColumnsAt is the index of the first lease column in a snapshot row.
const leaseColumnsAt = 3

// maxShared bounds the texts rawLeases keeps for sharing: holder labels
// that change with every run must not grow it without end.
const maxShared = 1 << 16

// leaseColumnCount is how many columns leaseColumns has.
const leaseColumnCount = 10

func newRawLeases(fds []pgconn.FieldDescription) rawLeases {
	oids := [leaseColumnCount]uint32{ // leaseColumns' types, in order
		pgtype.TextOID, pgtype.TextOID, pgtype.UUIDOID, pgtype.TextOID, pgtype.Int8OID,
		pgtype.TimestamptzOID, pgtype.TimestamptzOID, pgtype.TimestamptzOID, pgtype.BoolOID, pgtype.TextOID,
	}
	r := rawLeases{ok: len(fds) == leaseColumnsAt+leaseColumnCount, shared: map[string]string{}}
	for i, oid := range oids {
		if !r.ok {
			break
		}
		fd := fds[leaseColumnsAt+i]
		r.ok = fd.DataTypeOID == oid && (fd.Format == pgtype.BinaryFormatCode || oid == pgtype.TextOID)
	}
	return r
}

// decode fills l from a row's raw values. It reports false when the row
// must go to rows.Scan instead.
func (r *rawLeases) decode(raw [][]byte, l *Lease) bool {
	if !r.ok || len(raw) != leaseColumnsAt+leaseColumnCount {
		return false
	}
	v := raw[leaseColumnsAt:]
	for i, b := range v {
		if b == nil && i != len(v)-1 { // only the attachment may be NULL
			return false
		}
	}
	if len(v[2]) != 16 || len(v[4]) != 8 || len(v[8]) != 1 {
		return false
	}
	var ok [3]bool
	l.AcquiredAt, ok[0] = binaryTime(v[5])
	l.RenewedAt, ok[1] = binaryTime(v[6])
	l.ExpiresAt, ok[2] = binaryTime(v[7])
	if !ok[0] || !ok[1] || !ok[2] {
		return false
	}
	l.Key = Key{Account: r.text(v[0]), Session: string(v[1])}
	copy(l.RunID[:], v[2])
	l.Holder, l.Fence = r.text(v[3]), int64(binary.BigEndian.Uint64(v[4]))
	l.NotPreemptible, l.Attachment = v[8][0] == 0, r.text(v[9])
	return true
}

// text returns b as a string, the same string for the same bytes while
// fewer than maxShared texts have been seen.
func (r *rawLeases) text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := r.shared[string(b)]; ok { // no allocation: the compiler looks up the bytes
		return s
	}
	s := string(b)
	if len(r.shared) < maxShared {
		r.shared[s] = s
	}
	return s
}

// microsY2K is 2000-01-01 UTC, PostgreSQL's epoch, in Unix microseconds.
const microsY2K = 946_684_800 * 1_000_000

// binaryTime decodes a timestamptz in binary format as pgx does (a local
// time.Time). It reports false outside the years 100 to 9900, well inside
// what pgx takes, so rows.Scan decides about infinity and the rest.
func binaryTime(b []byte) (time.Time, bool) {
	us := int64(binary.BigEndian.Uint64(b))
	const lo, hi = -60_000_000_000_000_000, 250_000_000_000_000_000 // microseconds from 2000
	if us <= lo || us >= hi {
		return time.Time{}, false
	}
	return time.Unix(microsY2K/1_000_000+us/1_000_000, (us%1_000_000)*1_000), true
}
