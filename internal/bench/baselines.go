package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// selectOne is the round-trip floor.
func selectOne(*run) loop {
	return loop{op: func(ctx context.Context, c *client) error {
		var one int
		return c.conn.QueryRow(ctx, `SELECT 1`).Scan(&one)
	}}
}

// advisory takes a transaction-scoped advisory lock on the client's next key
// (released when the statement's implicit transaction ends). The lock ids are
// derived from this run's id, so they do not collide with the application's.
func advisory(r *run) loop {
	h := fnv.New64a()
	h.Write([]byte(r.id))
	base := int64(h.Sum64() &^ (1 << 63) &^ 0xffffffff) // low 32 bits: the key index
	return loop{op: func(ctx context.Context, c *client) error {
		i, _ := c.nextKey()
		var ok bool
		if err := c.conn.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, base+int64(c.id<<20+i)).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return errors.New("advisory lock unexpectedly busy")
		}
		return nil
	}}
}

// expiredTTL makes every lease expire before the client comes back to its key,
// so each uncontended acquire is a write (a takeover of an expired lease).
const expiredTTL = time.Microsecond

// holdTTL is how long bench holds the leases it keeps (contended, renew):
// longer than any run, short enough that an interrupted run's leftovers expire.
const holdTTL = 10 * time.Minute

// upsertSQL is lease.acquire's UPSERT as one plain statement on the scratch
// copy of the table: the same conditional write, no function, no trigger.
func upsertSQL(r *run) string {
	seq := quoteLiteral(r.table("fence_seq"))
	return `INSERT INTO ` + r.table("plain_lease") + ` AS l
		(account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
	VALUES ($1, $2, $3, $5, nextval(` + seq + `), now(), now(), now() + $4)
	ON CONFLICT (account_id, session_id) DO UPDATE
		SET run_id = EXCLUDED.run_id, holder = EXCLUDED.holder, fence = nextval(` + seq + `),
		    acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
		WHERE l.expires_at <= EXCLUDED.acquired_at`
}

func plainUpsert(r *run) loop {
	q := upsertSQL(r)
	return loop{op: func(ctx context.Context, c *client) error {
		_, key := c.nextKey()
		tag, err := c.conn.Exec(ctx, q, key.Account, key.Session, uuid.New(), expiredTTL, "bench")
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("upsert %s wrote %d rows, want 1", key, tag.RowsAffected())
		}
		return nil
	}}
}

// upsertContended: every client runs the UPSERT on one key that a holder
// keeps, so the conditional write never happens.
func upsertContended(r *run) loop {
	q := upsertSQL(r)
	key := r.keys("upsert-contended-hot", 1)[0]
	return loop{
		setup: func(ctx context.Context, c *client) error {
			if c.id != 0 {
				return nil
			}
			_, err := c.conn.Exec(ctx, q, key.Account, key.Session, uuid.New(), holdTTL, "holder")
			return err
		},
		op: func(ctx context.Context, c *client) error {
			tag, err := c.conn.Exec(ctx, q, key.Account, key.Session, uuid.New(), holdTTL, "bench")
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 0 {
				return fmt.Errorf("contended upsert %s wrote %d rows, want 0", key, tag.RowsAffected())
			}
			return nil
		},
	}
}

// The original SQL: the conditional UPSERT, the renewal and the DELETE of the
// schema the project started from (its seed, hence the rows' names
// seed-cycle, seed-upsert, seed-delete and keepalive-seed, which scripts and
// the recorded results in docs/BENCHMARKS.md use), on the seed's table
// (seed_lease), which has no trigger. Its CTE samples clock_timestamp() once
// for the whole statement, as lease.acquire does; the fence comes from the
// scratch sequence, as lease.acquire's does.
func originalUpsertSQL(r *run) string {
	seq := quoteLiteral(r.table("fence_seq"))
	return `WITH lease_clock AS (SELECT clock_timestamp() AS now_)
	INSERT INTO ` + r.table("seed_lease") + ` AS l
		(account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
	SELECT $1, $2, $3, $5, nextval(` + seq + `), now_, now_, now_ + $4 FROM lease_clock
	ON CONFLICT (account_id, session_id) DO UPDATE
		SET run_id = EXCLUDED.run_id, holder = EXCLUDED.holder, fence = nextval(` + seq + `),
		    acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
		WHERE l.expires_at <= EXCLUDED.acquired_at
	RETURNING run_id, fence, expires_at`
}

// originalRenewSQL is the original renewal: lease.renew's UPDATE of the
// run's own unexpired row, as one plain statement on seed_lease (no
// function, no hash of the run id), sampling clock_timestamp() once as the
// original did.
// Parameters: account, session, run id, ttl.
func originalRenewSQL(r *run) string {
	return `WITH lease_clock AS (SELECT clock_timestamp() AS now_)
	UPDATE ` + r.table("seed_lease") + ` l
	   SET renewed_at = now_, expires_at = now_ + $4
	  FROM lease_clock
	 WHERE l.account_id = $1 AND l.session_id = $2 AND l.run_id = $3 AND l.expires_at > now_
	RETURNING l.expires_at`
}

func originalDeleteSQL(r *run) string {
	return `DELETE FROM ` + r.table("seed_lease") + ` WHERE account_id = $1 AND session_id = $2 AND run_id = $3`
}

// originalCycle is the cycle workload in the original SQL: the UPSERT of a free
// key, then the DELETE of that run's row, each a statement of its own. It is
// the baseline of the acquire+release target: what a lease table costs with
// no function, no event row and no notification.
func originalCycle(r *run) loop {
	upsert, del := originalUpsertSQL(r), originalDeleteSQL(r)
	return loop{
		op: func(ctx context.Context, c *client) error {
			_, key := c.nextKey()
			run := uuid.New()
			err := c.time("acquire", func() error {
				var g data.Grant
				return c.conn.QueryRow(ctx, upsert, key.Account, key.Session, run, holdTTL, "bench").
					Scan(&g.RunID, &g.Fence, &g.ExpiresAt)
			})
			if err != nil {
				return fmt.Errorf("original upsert %s: %w", key, err)
			}
			return c.time("release", func() error {
				tag, err := c.conn.Exec(ctx, del, key.Account, key.Session, run)
				if err == nil && tag.RowsAffected() != 1 {
					err = fmt.Errorf("deleted %d rows, want 1", tag.RowsAffected())
				}
				if err != nil {
					return fmt.Errorf("original delete %s: %w", key, err)
				}
				return nil
			})
		},
		rows: []row{
			{name: "seed-cycle", desc: "the seed's UPSERT of a free key + its DELETE, on the seed's table (CHECKs, no trigger)"},
			{part: "acquire", name: "seed-upsert", desc: "the seed's conditional UPSERT (WITH lease_clock ... ON CONFLICT ... WHERE expired), timed inside seed-cycle"},
			{part: "release", name: "seed-delete", desc: "the seed's DELETE ... AND run_id, timed inside seed-cycle"},
		},
	}
}
