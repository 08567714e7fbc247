package bench

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// The acquire+release cycle as a program in another language makes it,
// statement by statement, each its own transaction (autocommit), on a free
// key:
//
//   - plainCycle: lease.acquire, then lease.release: each commit carries the
//     trigger's NOTIFY, and notifying commits go one at a time;
//   - sqlCallerCycle: lease.acquire_quiet, lease.notify_event of the event
//     it returned, lease.release_quiet, lease.notify_event: the post-commit
//     path (sql/triggers.sql), four statements.

// sqlCallerCalls are the statements of one cycle.
type sqlCallerCalls struct {
	acquire, release string // return the event id to notify (quiet) or nothing
	notify           string // "" when the calls notify in their commit
}

var (
	plainCalls = sqlCallerCalls{
		acquire: `SELECT NULL::bigint FROM lease.acquire($1, $2, $3, $4, $5)`,
		release: `SELECT NULL::bigint WHERE lease.release($1, $2, $3)`,
	}
	quietCalls = sqlCallerCalls{
		acquire: `SELECT event_id FROM lease.acquire_quiet($1, $2, $3, $4, $5)`,
		release: `SELECT lease.release_quiet($1, $2, $3)`,
		notify:  `SELECT lease.notify_event($1)`,
	}
)

func plainCycle(*run) loop     { return sqlCallerCycle(plainCalls) }
func sqlCallerQuiet(*run) loop { return sqlCallerCycle(quietCalls) }

func sqlCallerCycle(q sqlCallerCalls) loop {
	return loop{op: func(ctx context.Context, c *client) error {
		_, key := c.nextKey()
		run := uuid.New()
		for i, call := range []struct {
			sql  string
			args []any
		}{
			{q.acquire, []any{key.Account, key.Session, run, holdTTL, "bench"}},
			{q.release, []any{key.Account, key.Session, run}},
		} {
			var id *int64
			if err := c.conn.QueryRow(ctx, call.sql, call.args...).Scan(&id); err != nil {
				return fmt.Errorf("%s %s (step %d): %w", call.sql, key, i, err)
			}
			if q.notify == "" {
				continue
			}
			if id == nil {
				return fmt.Errorf("%s %s: no event to notify, want one", call.sql, key)
			}
			var sent bool
			if err := c.conn.QueryRow(ctx, q.notify, *id).Scan(&sent); err != nil || !sent {
				return fmt.Errorf("notify_event(%d) %s: sent %t, %v; want sent", *id, key, sent, err)
			}
		}
		return nil
	}}
}
