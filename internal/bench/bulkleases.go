package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/progress"
)

// bulkLeases writes n live leases of the workload tagged tag, the same rows
// preloadLeases writes (1000 accounts, 500 holder labels, holdTTL), straight
// into lease.session_lease with the ownership triggers off: a million
// leases in about a minute instead of the quarter hour a million
// lease.acquire calls take. The monitor and the exporter read the rows, not
// their history. Turning triggers off (session_replication_role) takes a
// superuser; without one it falls back to preloadLeases. The rows are a
// fleet that was there before: acquired and last renewed a minute ago, before
// the feed's delta overlap (monitor.FeedConfig.DeltaOverlap), so a monitor
// started right after the load does not read every lease again in its first
// delta read, inside the idle window (0.3 s of CPU at a million leases).
func (r *run) bulkLeases(ctx context.Context, tag string, n int) error {
	return r.bulkLeasesFrom(ctx, tag, 1, n)
}

// bulkLeasesFrom is bulkLeases of the leases from to n only: it grows a
// fleet that holds the first from-1 already (the monitor's load steps).
func (r *run) bulkLeasesFrom(ctx context.Context, tag string, from, n int) error {
	const chunk = 50_000 // a transaction each: the progress line moves every few seconds
	m, start := r.meter(), time.Now()
	m.Start(tag+": writing leases in bulk", int64(n), "leases")
	resume(m, from-1)
	defer m.Done("")
	for lo := from; lo <= n; lo += chunk {
		hi := min(lo+chunk-1, n)
		err := pgx.BeginFunc(ctx, r.admin, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
				return errNoBulk{err}
			}
			res, err := tx.Exec(ctx, `
				INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
				SELECT $1 || '-a' || lpad((g % 1000)::text, 4, '0'), 's' || lpad(g::text, 7, '0'), gen_random_uuid(),
				       'device-' || (g % 500), nextval('lease.fence_seq'),
				       now() - interval '1 minute', now() - interval '1 minute', now() + $4::interval
				  FROM generate_series($2::int, $3::int) g`,
				r.account(tag), lo, hi, holdTTL)
			if err == nil && res.RowsAffected() != int64(hi-lo+1) {
				err = fmt.Errorf("%d rows written, want %d", res.RowsAffected(), hi-lo+1)
			}
			return err
		})
		if nb := (errNoBulk{}); errors.As(err, &nb) && lo == from {
			m.Done("")
			r.progress(fmt.Sprintf("bulk load unavailable (%v): writing through lease.acquire", nb.err))
			return r.preloadLeasesFrom(ctx, tag, from, n)
		}
		if err != nil {
			return fmt.Errorf("write %d leases in bulk: %w", n, err)
		}
		m.Set(int64(hi))
	}
	m.Done(loaded(tag, "wrote", from, n, "leases", time.Since(start)))
	if _, err := r.admin.Exec(ctx, `ANALYZE lease.session_lease`); err != nil {
		return fmt.Errorf("analyze after the bulk load: %w", err)
	}
	return nil
}

// resume tells m, if it can hear it, that its count starts at done.
func resume(m Meter, done int) {
	if r, ok := m.(interface{ Resume(done int64) }); ok && done > 0 {
		r.Resume(int64(done))
	}
}

// loaded is the summary line of a bulk load of the units from to n:
// "monitor: wrote 1,000,000 leases in 58.2s (17,180/s)", or "monitor: wrote
// leases 10,001-100,000 in ..." for a load that grew a fleet.
func loaded(tag, verb string, from, n int, unit string, took time.Duration) string {
	what := progress.Count(int64(n)) + " " + unit
	if from > 1 {
		what = unit + " " + progress.Count(int64(from)) + "-" + progress.Count(int64(n))
	}
	return fmt.Sprintf("%s: %s %s in %s (%s/s)", tag, verb, what,
		progress.Seconds(took), progress.Count(int64(float64(n-from+1)/max(took.Seconds(), 1e-3))))
}

// errNoBulk is the refusal to turn the triggers off.
type errNoBulk struct{ err error }

func (e errNoBulk) Error() string { return e.err.Error() }

// quietDelete removes the run's leases with the triggers off where it may
// (a superuser): a million releases would otherwise write a million events
// and notifications, more than cleanup's 30 s allow. cleanup's own DELETE
// then finds nothing left, or does it the slow way.
func quietDelete(ctx context.Context, conn *pgx.Conn, prefix string) {
	_ = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM lease.session_lease WHERE starts_with(account_id, $1)`, prefix)
		return err
	})
}
