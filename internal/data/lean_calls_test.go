package data_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// checkHelpers are the validation functions, the run id's hash and the fence-race check that the
// hot calls must not call on valid input: each call of a function with its
// own search_path is set up again in every transaction. Valid input passes
// their inlined one-expression forms (lease.key_ok, ttl_ok, grant_ok), which
// PostgreSQL does not count as calls because it never calls them.
var checkHelpers = []string{
	"check_key", "check_ttl", "check_ttl_span", "check_label", "check_run_id", "refuse_grant",
	"key_ok", "ttl_ok", "grant_ok", "safe_text", "public_run_id", "higher_fences",
}

// TestHotCallsCallNoCheckOnValidInput counts, with track_functions = 'all',
// the functions that one acquire, renew and release call in a transaction
// (pg_stat_xact_user_functions): no validation helper may be among them.
func TestHotCallsCallNoCheckOnValidInput(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	conn := db.Conn(t)
	// Warm the session's plans first: a plan made for known parameter
	// values (the first five of a statement's) folds an immutable call on
	// them by calling it once, at planning, which the count would show.
	for i := range 10 {
		run := uuid.New()
		if _, err := conn.Exec(ctx, `SELECT FROM lease.acquire('acct', $1, $2, '1 minute', 'h'), lease.renew('acct', $1, $2, '1 minute'), lease.release('acct', $1, $2)`,
			"warm"+strconv.Itoa(i), run); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's own transaction
	run := uuid.New()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`SET LOCAL track_functions = 'all'`, nil},
		{`SELECT * FROM lease.acquire($1, $2, $3, $4, $5)`, []any{"acct", "sess", run, time.Minute, "holder"}},
		{`SELECT lease.renew($1, $2, $3, $4)`, []any{"acct", "sess", run, time.Minute}},
		{`SELECT lease.release($1, $2, $3)`, []any{"acct", "sess", run}},
	} {
		if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT funcname::text FROM pg_stat_xact_user_functions WHERE schemaname = 'lease' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var called []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		called = append(called, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"acquire", "renew", "release"} {
		if !slices.Contains(called, want) {
			t.Fatalf("lease.%s not among the counted calls %v: is track_functions counting?", want, called)
		}
	}
	for _, name := range called {
		if slices.Contains(checkHelpers, name) {
			t.Errorf("valid acquire, renew and release called lease.%s (all calls: %v), want only its inlined expression", name, called)
		}
	}
}
