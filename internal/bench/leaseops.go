package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
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

// acquirer makes one acquire of key for run on conn and reports whether run
// was granted: the library's (run.libAcquire) or one statement on the
// scratch copies (statementAcquire).
type acquirer func(ctx context.Context, conn *pgx.Conn, key data.Key, run uuid.UUID, ttl time.Duration) (bool, error)

// statementAcquire runs the acquire statement q.
func statementAcquire(q string) acquirer {
	return func(ctx context.Context, conn *pgx.Conn, key data.Key, run uuid.UUID, ttl time.Duration) (bool, error) {
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
}

// libAcquire is data.Store.Acquire's call, as the library makes it
// (sqlcall.AcquireQuiet: the call, then its notification after the commit,
// in one round trip) with the options the library would use on conn.
func (r *run) libAcquire(ctx context.Context, conn *pgx.Conn, key data.Key, run uuid.UUID, ttl time.Duration) (bool, error) {
	granted := false
	_, err := sqlcall.AcquireQuiet.Run(ctx, conn, r.callsOf(conn),
		[]any{key.Account, key.Session, run, ttl, "bench"}, []any{key.Account, key.Session, data.PublicRunID(run)},
		func(rows pgx.Rows) error {
			for rows.Next() {
				var g data.Grant
				if err := rows.Scan(&g.RunID, &g.Fence, &g.ExpiresAt); err != nil {
					return err
				}
				granted = g.RunID == run
			}
			return rows.Err()
		})
	if err != nil {
		return false, fmt.Errorf("acquire %s: %w", key, err)
	}
	return granted, nil
}

// libRelease is data.Store.Release's call, as the library makes it; it
// fails unless run held key.
func (r *run) libRelease(ctx context.Context, conn *pgx.Conn, key data.Key, run uuid.UUID) error {
	var ok bool
	_, err := sqlcall.ReleaseQuiet.Run(ctx, conn, r.callsOf(conn),
		[]any{key.Account, key.Session, run}, []any{key.Account, key.Session, data.PublicRunID(run)},
		func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&ok); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	if !ok {
		return fmt.Errorf("release %s: not held, want released", key)
	}
	return nil
}

// callsOf returns the options the library uses on conn (its query mode
// and tracer), worked out once per connection.
func (r *run) callsOf(conn *pgx.Conn) sqlcall.Options {
	if o, ok := r.calls.Load(conn); ok {
		return o.(sqlcall.Options)
	}
	o := sqlcall.OptionsFor(conn.Config())
	r.calls.Store(conn, o)
	return o
}

// mustAcquire acquires key for a new run with acq and returns the run,
// failing when the lease is held.
func mustAcquire(ctx context.Context, conn *pgx.Conn, acq acquirer, key data.Key, ttl time.Duration) (uuid.UUID, error) {
	run := uuid.New()
	ok, err := acq(ctx, conn, key, run, ttl)
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
func uncontendedAcquire(acq acquirer) loop {
	return loop{op: func(ctx context.Context, c *client) error {
		_, key := c.nextKey()
		_, err := mustAcquire(ctx, c.conn, acq, key, expiredTTL)
		return err
	}}
}

func acquire(r *run) loop          { return uncontendedAcquire(r.libAcquire) }
func acquireNoTrigger(r *run) loop { return uncontendedAcquire(statementAcquire(scratchAcquireSQL(r))) }

func acquireEventOnly(r *run) loop {
	return uncontendedAcquire(statementAcquire(r.onScratch(sqlcall.Acquire, "acquire", "acquire_ev")))
}

// acquireContended: every client asks for one key that a holder keeps.
func acquireContended(r *run) loop {
	key := r.keys("acquire-contended-hot", 1)[0]
	return loop{
		setup: func(ctx context.Context, c *client) error {
			if c.id != 0 {
				return nil
			}
			_, err := mustAcquire(ctx, c.conn, r.libAcquire, key, holdTTL)
			return err
		},
		op: func(ctx context.Context, c *client) error {
			ok, err := r.libAcquire(ctx, c.conn, key, uuid.New(), holdTTL)
			if err == nil && ok {
				err = fmt.Errorf("acquire %s: granted, want held by the holder", key)
			}
			return err
		},
	}
}

// cycle: acquire a free key (a fresh INSERT), then release it.
func cycle(r *run) loop {
	return loop{
		op: func(ctx context.Context, c *client) error {
			_, key := c.nextKey()
			var run uuid.UUID
			err := c.time("acquire", func() (err error) {
				run, err = mustAcquire(ctx, c.conn, r.libAcquire, key, holdTTL)
				return err
			})
			if err != nil {
				return err
			}
			return c.time("release", func() error { return r.libRelease(ctx, c.conn, key, run) })
		},
		rows: []row{
			{name: "cycle", desc: "lease.acquire of a free key + lease.release, back to back, as data.Store makes them"},
			{part: "acquire", name: "acquire-fresh", desc: "lease.acquire of a free key as the library makes it (INSERT + event row; the notification after the commit), timed inside cycle"},
			{part: "release", name: "release", desc: "lease.release of a held lease as the library makes it (DELETE + event row; the notification after the commit), timed inside cycle"},
		},
	}
}

// renewLoop: each client holds all its keys and renews them round robin.
func renewLoop(acq acquirer, ren string) loop {
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

func renew(r *run) loop { return renewLoop(r.libAcquire, sqlcall.Renew) }

// seedRenew is the seed's renewal (seedRenewSQL) of keys the seed's UPSERT
// acquired: the baseline of Store.Renew's target.
func seedRenew(r *run) loop {
	q := seedRenewSQL(r)
	l := renewLoop(seedAcquire(r), "")
	l.op = func(ctx context.Context, c *client) error {
		i, key := c.nextKey()
		tag, err := c.conn.Exec(ctx, q, key.Account, key.Session, c.runs[i], holdTTL)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("renewed %d rows, want 1", tag.RowsAffected())
		}
		if err != nil {
			return fmt.Errorf("seed renew %s: %w", key, err)
		}
		return nil
	}
	return l
}

func renewNoTrigger(r *run) loop {
	return renewLoop(statementAcquire(scratchAcquireSQL(r)), scratchRenewSQL(r))
}

// renewNotify is renew-notrigger with the renewal notification switched on on
// the copy, as lease.set_notify_renewals(true) does on the real table: every
// renewal NOTIFYs (on bench's own channel).
func renewNotify(ctx context.Context, r *run, w workload) ([]Result, error) {
	on, off := renewalTriggerDDL(r.schema)
	if _, err := r.admin.Exec(ctx, on); err != nil {
		return nil, fmt.Errorf("switch renewal notifications on: %w", err)
	}
	defer r.admin.Exec(context.WithoutCancel(ctx), off) //nolint:errcheck // the schema is dropped at the end anyway
	l := renewNoTrigger(r)
	l.rows = []row{{name: w.name, desc: "lease.renew's code with notify_renewals on: every renewal NOTIFYs"}}
	return r.runLoop(ctx, w, l)
}
