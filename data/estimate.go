package data

import (
	"context"
	"math"
)

// maxLeaseEstimate caps the room a snapshot makes at once from the planner's
// estimate, which an ANALYZE of a table that was briefly huge can inflate.
const maxLeaseEstimate = 4_000_000

// leaseEstimate is the planner's count of lease rows (pg_class.reltuples,
// kept by ANALYZE and autovacuum), 0 when there is none: a snapshot makes
// room for that many leases at once instead of growing its slice, which at
// 1,000,000 leases copied them over and over (a third of the read's CPU,
// issue 30). A failure only loses the hint: what made it fail (a cancelled
// context, a missing schema) fails the lease read after it too.
func leaseEstimate(ctx context.Context, q Querier) int {
	var n float64
	err := q.QueryRow(ctx, `SELECT reltuples::float8 FROM pg_catalog.pg_class WHERE oid = 'lease.session_lease'::regclass`).Scan(&n)
	if err != nil || n <= 0 || math.IsNaN(n) {
		return 0
	}
	return int(min(n*1.05+64, maxLeaseEstimate))
}
