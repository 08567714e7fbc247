package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"
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
