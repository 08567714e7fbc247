package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
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

// The seed is the design card's lease, which predates this repository: "a
// row keyed by (account_id, session_id) holding a fresh run_id and an expiry
// on the database clock, taken with one atomic conditional UPSERT". Its
// table (seed_lease, seedTable) and its three statements are the seed's,
// verbatim but for the table's scratch schema: the baseline of every
// "the seed's" ratio (rows seed-cycle, seed-upsert, seed-delete, seed-renew
// and keepalive-seed). No fence, no label, no CHECK, no trigger.
// Parameters: account, session, run id, ttl.
func seedAcquireSQL(r *run) string {
	return `INSERT INTO ` + r.table("seed_lease") + ` AS l (account_id, session_id, run_id, expires_at) VALUES ($1, $2, $3, now() + $4)
ON CONFLICT (account_id, session_id) DO UPDATE SET run_id = EXCLUDED.run_id, expires_at = EXCLUDED.expires_at WHERE l.expires_at <= now()
RETURNING run_id, expires_at`
}

// seedRenewSQL is the seed's renewal: one row affected when renewed.
// Parameters: account, session, run id, ttl.
func seedRenewSQL(r *run) string {
	return `UPDATE ` + r.table("seed_lease") + ` SET expires_at = now() + $4 WHERE account_id = $1 AND session_id = $2 AND run_id = $3 AND expires_at > now()`
}

// seedReleaseSQL is the seed's release. Parameters: account, session, run id.
func seedReleaseSQL(r *run) string {
	return `DELETE FROM ` + r.table("seed_lease") + ` WHERE account_id = $1 AND session_id = $2 AND run_id = $3`
}

// seedAcquire is the seed's acquire as an acquirer: granted when the UPSERT
// returned the run's row.
func seedAcquire(r *run) acquirer {
	q := seedAcquireSQL(r)
	return func(ctx context.Context, conn *pgx.Conn, key data.Key, run uuid.UUID, ttl time.Duration) (bool, error) {
		var got uuid.UUID
		var exp time.Time
		err := conn.QueryRow(ctx, q, key.Account, key.Session, run, ttl).Scan(&got, &exp)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("seed acquire %s: %w", key, err)
		}
		return got == run, nil
	}
}

// seedCycle is the cycle workload in the seed's SQL: the UPSERT of a free
// key, then the DELETE of that run's row, each a statement (and a
// transaction) of its own. It is the baseline of the acquire+release
// target: what a lease table costs with no function, no fence, no event
// row and no notification.
func seedCycle(r *run) loop {
	upsert, del := seedAcquireSQL(r), seedReleaseSQL(r)
	return twoStatementCycle(upsert, del, func(key data.Key, run uuid.UUID) []any {
		return []any{key.Account, key.Session, run, holdTTL}
	}, []row{
		{name: "seed-cycle", desc: "the seed's UPSERT of a free key + its DELETE, on the seed's table (4 columns, its primary key, nothing else)"},
		{part: "acquire", name: "seed-upsert", desc: "the seed's conditional UPSERT (INSERT ... ON CONFLICT DO UPDATE ... WHERE expired RETURNING run_id, expires_at), timed inside seed-cycle"},
		{part: "release", name: "seed-delete", desc: "the seed's DELETE ... AND run_id, timed inside seed-cycle"},
	})
}

// twoStatementCycle is a cycle of two plain statements on a free key: the
// acquire, which must return one row, then the release, which must delete
// one. args gives the acquire's parameters; the release takes the first
// three (account, session, run id).
func twoStatementCycle(acquire, release string, args func(data.Key, uuid.UUID) []any, rows []row) loop {
	return loop{
		op: func(ctx context.Context, c *client) error {
			_, key := c.nextKey()
			run := uuid.New()
			a := args(key, run)
			err := c.time("acquire", func() error {
				rows, err := c.conn.Query(ctx, acquire, a...)
				if err != nil {
					return err
				}
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Err(); err != nil {
					return err
				}
				if n != 1 {
					return fmt.Errorf("returned %d rows, want 1", n)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s acquire %s: %w", rows[0].name, key, err)
			}
			return c.time("release", func() error {
				tag, err := c.conn.Exec(ctx, release, a[:3]...)
				if err == nil && tag.RowsAffected() != 1 {
					err = fmt.Errorf("deleted %d rows, want 1", tag.RowsAffected())
				}
				if err != nil {
					return fmt.Errorf("%s release %s: %w", rows[0].name, key, err)
				}
				return nil
			})
		},
		rows: rows,
	}
}

// leasetop v1's table (v1_lease, v1Table) and its UPSERT and DELETE: the
// baseline bench called "the seed" until it was found to be
// leasetop's own first version, eight columns and three CHECKs. Kept as the
// opt-in row v1-cycle, so a run can restate a ratio measured against it.
// Its CTE samples clock_timestamp() once for the whole statement, as
// lease.acquire does; the fence comes from the scratch sequence.
func v1AcquireSQL(r *run) string {
	seq := quoteLiteral(r.table("fence_seq"))
	return `WITH lease_clock AS (SELECT clock_timestamp() AS now_)
	INSERT INTO ` + r.table("v1_lease") + ` AS l
		(account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
	SELECT $1, $2, $3, $5, nextval(` + seq + `), now_, now_, now_ + $4 FROM lease_clock
	ON CONFLICT (account_id, session_id) DO UPDATE
		SET run_id = EXCLUDED.run_id, holder = EXCLUDED.holder, fence = nextval(` + seq + `),
		    acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
		WHERE l.expires_at <= EXCLUDED.acquired_at
	RETURNING run_id, fence, expires_at`
}

// v1Cycle is seedCycle on leasetop v1's table and statements.
func v1Cycle(r *run) loop {
	del := `DELETE FROM ` + r.table("v1_lease") + ` WHERE account_id = $1 AND session_id = $2 AND run_id = $3`
	return twoStatementCycle(v1AcquireSQL(r), del, func(key data.Key, run uuid.UUID) []any {
		return []any{key.Account, key.Session, run, holdTTL, "bench"}
	}, []row{
		{name: "v1-cycle", desc: "leasetop v1's UPSERT of a free key + its DELETE, on v1's table (8 columns, 3 CHECKs, no trigger): bench's baseline before issue 38"},
	})
}
