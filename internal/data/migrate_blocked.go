package data

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MigrateBlockedError is MigrateWith giving up on locks that other sessions
// held for longer than its Wait.
type MigrateBlockedError struct {
	Wait     time.Duration
	Blockers []Blocker // the sessions found holding what the migration waits for, longest open first; may be empty
}

// Blocker is a session that holds a lock a migration waits for.
type Blocker struct {
	PID   int
	Role  string
	State string        // pg_stat_activity.state: "idle in transaction", "active", …
	Open  time.Duration // how long it has held the lock at least: its transaction's age, or its session's for a session-level advisory lock
	What  string        // what it holds: a lease table, or migrate's advisory lock
}

func (e *MigrateBlockedError) Error() string {
	if len(e.Blockers) == 0 {
		return fmt.Sprintf("migrate: gave up after %s waiting for locks on the lease schema; run it again when the transactions using it have ended", e.Wait)
	}
	b := e.Blockers[0]
	var more string
	if n := len(e.Blockers) - 1; n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("migrate: gave up after %s waiting for %s, held by pid %d%s (role %s, %s, for %s): end that session's transaction or lock (SELECT pg_terminate_backend(%d)) and run migrate again",
		e.Wait, b.What, b.PID, more, b.Role, b.State, b.Open.Round(time.Second), b.PID)
}

// blockers lists the sessions whose transactions hold, since before the
// migration's last attempt, a lock on a table of the lease schema or migrate's
// advisory lock. It runs with migrateSettings' search_path.
const blockers = `
SELECT a.pid, coalesce(a.usename::text, ''), coalesce(a.state, ''),
       extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, a.state_change, a.backend_start))::float8,
       string_agg(DISTINCT CASE l.locktype WHEN 'advisory' THEN 'the advisory lock that serialises migrations'
                                ELSE l.relation::regclass::text END, ', ')
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.granted AND l.pid <> pg_backend_pid()
   AND coalesce(a.xact_start, a.state_change, a.backend_start) < clock_timestamp() - $1::interval
   AND (   (l.locktype = 'relation'
            AND l.relation IN (SELECT c.oid FROM pg_class c WHERE c.relnamespace = to_regnamespace('lease')::oid))
        OR (l.locktype = 'advisory' AND l.objsubid = 1
            AND l.classid::int8 = ($2::int8 >> 32) AND l.objid::int8 = ($2::int8 & 4294967295)))
 GROUP BY a.pid, a.usename, a.state, a.xact_start, a.state_change, a.backend_start
 ORDER BY 4 DESC
 LIMIT 10`

// blocked builds the error for a migration that waited wait in vain.
func blocked(ctx context.Context, conn *pgx.Conn, wait time.Duration) error {
	e := &MigrateBlockedError{Wait: wait}
	_ = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, blockers, fmt.Sprintf("%dms", lockAttempt.Milliseconds()), int64(migrateLock))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				b    Blocker
				open float64
			)
			if err := rows.Scan(&b.PID, &b.Role, &b.State, &open, &b.What); err != nil {
				return err
			}
			b.Open = time.Duration(open * float64(time.Second))
			e.Blockers = append(e.Blockers, b)
		}
		return rows.Err()
	})
	return e
}
