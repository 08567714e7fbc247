package data_test

import (
	"context"
	"fmt"
	"maps"
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

// TestLimitedGrantCalls holds a grant in a limited account to the one call
// its slots need: take_slots, which takes every limit's slot, writes it and
// names the slots; no claim_slots around it, no slots_granted after a grant
// (only a grant that did not happen gives its slots back), no slot_free for
// a slot that names nobody or the session itself, and no SQL function
// (planned again at every call). Each call with its own search_path is set
// up again in every transaction.
func TestLimitedGrantCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	if _, err := db.Conn(t).Exec(ctx, `SELECT lease.set_limit('limited', '', 2)`); err != nil {
		t.Fatal(err)
	}
	calls := func(sql string) map[string]int64 {
		t.Helper()
		conn := db.Conn(t) // its own: a backend's function counts are flushed at most once a second
		got := map[string]int64{}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL track_functions = 'all'`); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, sql, uuid.New()).Scan(&n); err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("%d grants, want 1", n)
			}
			rows, err := tx.Query(ctx, `SELECT funcname, calls FROM pg_stat_xact_user_functions WHERE schemaname = 'lease'`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var name string
				var c int64
				if err := rows.Scan(&name, &c); err != nil {
					return err
				}
				got[name] = c
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := map[string]int64{"acquire": 1, "take_slots": 1}
	grant := `SELECT count(*) FROM lease.acquire('limited', 'chat-1', $1, '1 minute', 'w')`
	if got := calls(grant); !maps.Equal(got, want) {
		t.Errorf("a limited grant of a free slot called %v, want %v", got, want)
	}
	// A second session: the first holds slot 1, so it takes slot 2.
	if got := calls(strings.Replace(grant, "chat-1", "chat-2", 1)); !maps.Equal(got, want) {
		t.Errorf("a second limited grant called %v, want %v", got, want)
	}
}
