package data_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestCycleCallsNoTrigger: a fresh grant and its release write their
// events in lease.acquire and lease.release themselves, so neither calls
// the ownership trigger's function (a queued AFTER trigger and a PL/pgSQL
// call with its own search_path each, the largest part of a cycle leasetop
// added to the lean floor); a takeover of an expired lease, whose previous
// holder only the trigger sees, still calls it once. Counted by PostgreSQL's
// function statistics in the calls' own transaction.
func TestCycleCallsNoTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	count := func(steps ...string) (calls int64) {
		t.Helper()
		conn := db.Conn(t) // its own: a backend's function counts are flushed at most once a second
		a := uuid.New()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL track_functions = 'pl'`); err != nil {
				return err
			}
			for _, sql := range steps {
				var args []any
				if strings.Contains(sql, "$1") {
					args = []any{a}
				}
				if _, err := tx.Exec(ctx, sql, args...); err != nil {
					return err
				}
			}
			return tx.QueryRow(ctx, `SELECT coalesce(pg_stat_get_xact_function_calls('lease.on_session_lease_change'::regproc), 0)`).Scan(&calls)
		})
		if err != nil {
			t.Fatal(err)
		}
		return calls
	}
	cycle := []string{
		`SELECT * FROM lease.acquire('acme', 'cycle', $1, '1 minute', 'w')`,
		`SELECT lease.release('acme', 'cycle', $1)`,
	}
	if got := count(cycle...); got != 0 {
		t.Errorf("acquire + release of a free key called the ownership trigger %d times, want 0", got)
	}
	takeover := []string{
		// expired a microsecond after its grant: the next call's clock is past it
		`SELECT * FROM lease.acquire('acme', 'expired', gen_random_uuid(), '1 microsecond', 'old')`,
		`SELECT * FROM lease.acquire('acme', 'expired', $1, '1 minute', 'new')`,
	}
	if got := count(takeover...); got != 1 {
		t.Errorf("a grant and a takeover of its expired lease called the trigger %d times, want 1 (the takeover)", got)
	}
}
