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
// 1,000,000 leases copied them over and over (a third of the read's CPU). The table is found by name in the catalogue, not by a regclass
// cast, which needs USAGE on schema lease: a login without it must get the
// lease read's own permission error, not an aborted transaction. A failure
// only loses the hint: what made it fail (a cancelled context) fails the
// lease read after it too.
func leaseEstimate(ctx context.Context, q Querier) int {
	var n float64
	err := q.QueryRow(ctx, `SELECT c.reltuples::float8 FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'lease' AND c.relname = 'session_lease'`).Scan(&n)
	if err != nil || n <= 0 || math.IsNaN(n) {
		return 0
	}
	return int(min(n*1.05+64, maxLeaseEstimate))
}
