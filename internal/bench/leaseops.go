package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
)

// onScratch returns call, one of the lease functions' calls as data.Store
// sends it (internal/sqlcall), with lease.fn replaced by its copy as in the
// scratch schema: the same statement, on the table without trigger.
func (r *run) onScratch(call, fn, as string) string {
	return strings.Replace(call, "lease."+fn+"(", r.table(as)+"(", 1)
}

// scratchAcquireSQL and scratchRenewSQL call the copies on the table without
// trigger.
func scratchAcquireSQL(r *run) string { return r.onScratch(sqlcall.Acquire, "acquire", "acquire") }

func scratchRenewSQL(r *run) string { return r.onScratch(sqlcall.Renew, "renew", "renew") }

// acquireOnce runs an acquire statement and reports whether run was granted.
func acquireOnce(ctx context.Context, conn *pgx.Conn, q string, key data.Key, run uuid.UUID, ttl time.Duration) (bool, error) {
	var g data.Grant
	err := conn.QueryRow(ctx, q, key.Account, key.Session, run, ttl, "bench").Scan(&g.RunID, &g.Fence, &g.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("acquire %s: %w", key, err)
	}
	return g.RunID == run, nil
}

// mustAcquire acquires key for a new run and returns the run, failing when
// the lease is held.
func mustAcquire(ctx context.Context, conn *pgx.Conn, q string, key data.Key, ttl time.Duration) (uuid.UUID, error) {
	run := uuid.New()
	ok, err := acquireOnce(ctx, conn, q, key, run, ttl)
	if err != nil {
		return uuid.Nil, err
	}
	if !ok {
		return uuid.Nil, fmt.Errorf("acquire %s: held by another run, want granted", key)
	}
	return run, nil
}

// uncontendedAcquire: each op takes the client's next key with a fresh run;
// the previous lease on it has expired, so every op writes.
func uncontendedAcquire(q string) loop {
	return loop{op: func(ctx context.Context, c *client) error {
		_, key := c.nextKey()
		_, err := mustAcquire(ctx, c.conn, q, key, expiredTTL)
		return err
	}}
}

func acquire(*run) loop            { return uncontendedAcquire(sqlcall.Acquire) }
func acquireNoTrigger(r *run) loop { return uncontendedAcquire(scratchAcquireSQL(r)) }

func acquireEventOnly(r *run) loop {
	return uncontendedAcquire(r.onScratch(sqlcall.Acquire, "acquire", "acquire_ev"))
}

// acquireContended: every client asks for one key that a holder keeps.
func acquireContended(r *run) loop {
	key := r.keys("acquire-contended-hot", 1)[0]
	return loop{
		setup: func(ctx context.Context, c *client) error {
			if c.id != 0 {
				return nil
			}
			_, err := mustAcquire(ctx, c.conn, sqlcall.Acquire, key, holdTTL)
			return err
		},
		op: func(ctx context.Context, c *client) error {
			ok, err := acquireOnce(ctx, c.conn, sqlcall.Acquire, key, uuid.New(), holdTTL)
			if err == nil && ok {
				err = fmt.Errorf("acquire %s: granted, want held by the holder", key)
			}
			return err
		},
	}
}

// cycle: acquire a free key (a fresh INSERT), then release it.
func cycle(*run) loop {
	return loop{
		op: func(ctx context.Context, c *client) error {
			_, key := c.nextKey()
			var run uuid.UUID
			err := c.time("acquire", func() (err error) {
				run, err = mustAcquire(ctx, c.conn, sqlcall.Acquire, key, holdTTL)
				return err
			})
			if err != nil {
				return err
			}
			return c.time("release", func() error { return release(ctx, c.conn, key, run) })
		},
		rows: []row{
			{name: "cycle", desc: "lease.acquire of a free key + lease.release, back to back"},
			{part: "acquire", name: "acquire-fresh", desc: "lease.acquire of a free key (INSERT + event row + NOTIFY), timed inside cycle"},
			{part: "release", name: "release", desc: "lease.release of a held lease (DELETE + event row + NOTIFY), timed inside cycle"},
		},
	}
}

func release(ctx context.Context, conn *pgx.Conn, key data.Key, run uuid.UUID) error {
	var ok bool
	if err := conn.QueryRow(ctx, sqlcall.Release, key.Account, key.Session, run).Scan(&ok); err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	if !ok {
		return fmt.Errorf("release %s: not held, want released", key)
	}
	return nil
}

// renewLoop: each client holds all its keys and renews them round robin.
func renewLoop(acq, ren string) loop {
	return loop{
		setup: func(ctx context.Context, c *client) error {
			for i, key := range c.keys {
				run, err := mustAcquire(ctx, c.conn, acq, key, holdTTL)
				if err != nil {
					return err
				}
				c.runs[i] = run
			}
			return nil
		},
		op: func(ctx context.Context, c *client) error {
			i, key := c.nextKey()
			var exp *time.Time
			if err := c.conn.QueryRow(ctx, ren, key.Account, key.Session, c.runs[i], holdTTL).Scan(&exp); err != nil {
				return fmt.Errorf("renew %s: %w", key, err)
			}
			if exp == nil {
				return fmt.Errorf("renew %s: rejected, want renewed", key)
			}
			return nil
		},
	}
}

func renew(*run) loop { return renewLoop(sqlcall.Acquire, sqlcall.Renew) }

func renewNoTrigger(r *run) loop { return renewLoop(scratchAcquireSQL(r), scratchRenewSQL(r)) }

// renewNotify is renew-notrigger with the renewal notification switched on on
// the copy, as lease.set_notify_renewals(true) does on the real table: every
// renewal NOTIFYs (on bench's own channel).
func renewNotify(ctx context.Context, r *run, w workload) ([]Result, error) {
	on, off := renewalTriggerDDL(r.schema)
	if _, err := r.admin.Exec(ctx, on); err != nil {
		return nil, fmt.Errorf("switch renewal notifications on: %w", err)
	}
	defer r.admin.Exec(context.WithoutCancel(ctx), off) //nolint:errcheck // the schema is dropped at the end anyway
	l := renewLoop(scratchAcquireSQL(r), scratchRenewSQL(r))
	l.rows = []row{{name: w.name, desc: "lease.renew's code with notify_renewals on: every renewal NOTIFYs"}}
	return r.runLoop(ctx, w, l)
}
