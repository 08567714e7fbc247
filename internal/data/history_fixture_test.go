package data_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// historyFixture writes, straight into db's tables (no trigger), leases
// live leases of account "bench" (sessions s1..sN, acquired an hour ago,
// renewed in the last 5 s) and a history of the last minutes at perSecond
// transitions a second, spread over the sessions (each a takeover of the
// one before, one in ten a rejected renewal), as the monitor's bench load
// leaves it; then ANALYZE. It returns the server time the history ends at.
func historyFixture(tb testing.TB, db pgtest.DB, leases, perSecond, minutes int) time.Time {
	tb.Helper()
	ctx := context.Background()
	conn := db.Conn(tb)
	var end time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&end); err != nil {
		tb.Fatal(err)
	}
	n := perSecond * minutes * 60
	step := time.Second / time.Duration(perSecond)
	type stmt struct {
		sql  string
		args []any
	}
	for _, q := range []stmt{
		{`SET session_replication_role = replica`, nil},
		{fmt.Sprintf(`INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
			SELECT 'bench', 's' || i, gen_random_uuid(), 'device-' || (i %% 50), i,
			       $1::timestamptz - interval '1 hour', $1::timestamptz - random() * interval '5 s', $1::timestamptz + interval '25 s'
			  FROM generate_series(1, %d) i`, leases), []any{end}},
		{fmt.Sprintf(`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence,
			                          expires_at, prev_expires_at, holder, actor)
			SELECT $1::timestamptz - (%d - j) * $2::interval,
			       CASE WHEN j %% 10 = 0 THEN 'renew_rejected' ELSE 'taken_over' END,
			       'bench', 's' || (1 + (j::bigint * 7919) %% %d), gen_random_uuid(), gen_random_uuid(), %d + j, j,
			       $1::timestamptz - (%d - j) * $2::interval + interval '30 s', $1::timestamptz - (%d - j) * $2::interval,
			       'device-' || (j %% 50), 'bench'
			  FROM generate_series(1, %d) j`, n, leases, leases, n, n, n), []any{end, step}},
		{`RESET session_replication_role`, nil},
		{`ANALYZE lease.session_lease`, nil},
		{`ANALYZE lease.event`, nil},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			tb.Fatalf("history fixture: %v", err)
		}
	}
	return end
}

// lanes returns the first n sessions of historyFixture's: the lanes a
// timeline shows.
func lanes(n int) []data.Key {
	keys := make([]data.Key, n)
	for i := range keys {
		keys[i] = data.Key{Account: "bench", Session: fmt.Sprintf("s%d", i+1)}
	}
	return keys
}

// pgxCollectStrings reads rows of one text column.
func pgxCollectStrings(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close()
}) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
