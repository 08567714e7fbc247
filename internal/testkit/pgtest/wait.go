package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// pollEvery is how often the waits below look again: they poll a condition
// until a deadline, never sleep for readiness.
const pollEvery = 10 * time.Millisecond

// serverWait bounds the waits on the server clock: a lease a test expires on
// purpose has a TTL of a second at most.
const serverWait = 15 * time.Second

// Querier runs one query: a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Eventually polls cond until it holds, failing the test after timeout with
// what it was waiting for.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pollEvery) // polling a condition, bounded by the deadline
	}
}

// WaitServerPast polls the database clock until it is past at: what an
// expiry test waits for, since the server's clock decides expiry.
func WaitServerPast(t testing.TB, q Querier, at time.Time) {
	t.Helper()
	waitServer(t, q, "the server clock to pass "+at.Format(time.RFC3339Nano), `SELECT clock_timestamp() > $1`, at)
}

// WaitExpired polls until the lease on k has expired on the database clock
// (or is gone).
func WaitExpired(t testing.TB, q Querier, k data.Key) {
	t.Helper()
	waitServer(t, q, "the lease on "+k.String()+" to expire", `SELECT coalesce((SELECT expires_at <= clock_timestamp()
		FROM lease.session_lease WHERE account_id = $1 AND session_id = $2), true)`, k.Account, k.Session)
}

// WaitBackendGone polls until the server process pid has ended (for
// example a session the server terminated).
func WaitBackendGone(t testing.TB, q Querier, pid int) {
	t.Helper()
	waitServer(t, q, fmt.Sprintf("server process %d to end", pid),
		`SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)`, pid)
}

// WaitAppGone polls until no server process of the application app (its
// application_name: AppURL) is left. After its client process is killed, a
// backend still finishes the statement it was running, and may commit it,
// before it notices: a test that kills a client and then changes what that
// statement would find waits for this first.
func WaitAppGone(t testing.TB, q Querier, app string) {
	t.Helper()
	waitServer(t, q, "the server processes of "+app+" to end",
		`SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = $1)`, app)
}

// AppURL is dsn with application_name app: how WaitAppGone finds a client
// process's backends.
func AppURL(t testing.TB, dsn, app string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse the test URL: %v", err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// waitServer polls a query that returns one boolean until it is true.
func waitServer(t testing.TB, q Querier, what, sql string, args ...any) {
	t.Helper()
	Eventually(t, serverWait, what, func() bool {
		var ok bool
		if err := q.QueryRow(context.Background(), sql, args...).Scan(&ok); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		return ok
	})
}
