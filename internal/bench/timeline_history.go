package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// timelineHistoryWindow is how far back the timeline workload's history
// reaches: the timeline's default window.
const timelineHistoryWindow = 15 * time.Minute

// timelineRate is the history's transitions a second for a fleet of n
// leases: 1000 at 100,000 (900,000 events in 15 minutes, 9 a session), the
// same density per session for a smaller fleet.
func timelineRate(n int) int { return max(1, n/100) }

// preloadHistory writes, straight into lease.event (bulk rows, no trigger
// involved), the last timelineHistoryWindow of history of the leases
// preloadLeases(tag, n) writes: rate transitions a second, each a takeover
// of one of the n sessions (spread by a stride, one in ten a rejected
// renewal instead), as a fleet at that rate leaves it; fences are drawn
// from lease.fence_seq, so the leases acquired after it have higher ones
// (lease.acquire refuses a grant below a fence its key's history shows). It ends at the
// server's clock now and is written in chunks of 100,000 rows; then
// ANALYZE (skipped when the role may not). It returns the history's end.
func (r *run) preloadHistory(ctx context.Context, tag string, n, rate int) (time.Time, error) {
	var end time.Time
	if err := r.admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&end); err != nil {
		return end, fmt.Errorf("read the server clock: %w", data.Translate(err))
	}
	total := rate * int(timelineHistoryWindow/time.Second)
	step := time.Second / time.Duration(rate)
	const chunk = 100_000
	m, start := r.meter(), time.Now()
	m.Start(tag+": writing the history", int64(total), "events")
	defer m.Done("")
	for lo := 1; lo <= total; lo += chunk {
		hi := min(lo+chunk-1, total)
		_, err := r.admin.Exec(ctx, `
			INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence,
			                         expires_at, prev_expires_at, holder)
			SELECT $1::timestamptz - ($4 - j) * $5::interval,
			       CASE WHEN j % 10 = 0 THEN 'renew_rejected' ELSE 'taken_over' END::lease.event_kind,
			       $6 || '-a' || lpad((s % 1000)::text, 4, '0'), 's' || lpad(s::text, 7, '0'),
			       gen_random_uuid(), gen_random_uuid(), k.f, k.f - 1,
			       $1::timestamptz - ($4 - j) * $5::interval + interval '30 s', $1::timestamptz - ($4 - j) * $5::interval,
			       'device-' || (s % 500)
			  FROM generate_series($2::bigint, $3::bigint) j, LATERAL (SELECT 1 + (j * 7919) % $7 AS s, nextval('lease.fence_seq') AS f) k`,
			end, lo, hi, total, step, r.account(tag), n)
		if err != nil {
			return end, fmt.Errorf("write the history (events %d-%d of %d): %w", lo, hi, total, data.Translate(err))
		}
		m.Set(int64(hi))
	}
	m.Done(loaded(tag, "wrote", 1, total, "events", time.Since(start)))
	_, _ = r.admin.Exec(ctx, `ANALYZE lease.event`) // a role that does not own it keeps the server's statistics
	return end, nil
}
