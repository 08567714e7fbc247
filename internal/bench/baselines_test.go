package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// The seed as the design card writes it: its table and
// its three statements, verbatim. The bench's copy differs only in the
// table's schema (the run's scratch schema).
const (
	verbatimCreate  = `CREATE TABLE seed_lease (account_id text NOT NULL, session_id text NOT NULL, run_id uuid NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (account_id, session_id))`
	verbatimAcquire = `INSERT INTO seed_lease AS l (account_id, session_id, run_id, expires_at) VALUES ($1, $2, $3, now() + $4) ON CONFLICT (account_id, session_id) DO UPDATE SET run_id = EXCLUDED.run_id, expires_at = EXCLUDED.expires_at WHERE l.expires_at <= now() RETURNING run_id, expires_at`
	verbatimRenew   = `UPDATE seed_lease SET expires_at = now() + $4 WHERE account_id = $1 AND session_id = $2 AND run_id = $3 AND expires_at > now()`
	verbatimRelease = `DELETE FROM seed_lease WHERE account_id = $1 AND session_id = $2 AND run_id = $3`
)

// oneLine folds every run of white space into one space, and the space
// after "(" and before ")" away.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("( ", "(", " )", ")").Replace(s)
}

// TestSeedIsTheSeed: the baseline every "the seed's" ratio divides by is
// the seed's table and statements as the seed writes them, not leasetop's
// first table (eight columns and three CHECKs).
func TestSeedIsTheSeed(t *testing.T) {
	t.Parallel()
	r := &run{schema: "lease_bench_x"}
	q := r.table("seed_lease")
	tests := []struct{ name, got, want string }{
		{"table", "CREATE TABLE seed_lease " + seedTable, verbatimCreate},
		{"acquire", seedAcquireSQL(r), strings.Replace(verbatimAcquire, "seed_lease", q, 1)},
		{"renew", seedRenewSQL(r), strings.Replace(verbatimRenew, "seed_lease", q, 1)},
		{"release", seedReleaseSQL(r), strings.Replace(verbatimRelease, "seed_lease", q, 1)},
	}
	for _, tt := range tests {
		if got, want := oneLine(tt.got), oneLine(tt.want); got != want {
			t.Errorf("the seed's %s:\n got %s\nwant %s", tt.name, got, want)
		}
	}
}

// TestSeedTableHasNothingElse reads the scratch schema's seed_lease back
// from the catalogue: four columns, its primary key, no other constraint,
// index or trigger; and the seed's statements take, renew and free a key
// on it.
func TestSeedTableHasNothingElse(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	r, err := newRun(ctx, Config{DSN: db.URL, Clients: 1, Keys: 1, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.cleanup(ctx) //nolint:errcheck // the database is dropped with the test
	if err := r.createScratch(ctx); err != nil {
		t.Fatal(err)
	}
	var cols, cons, idx, trig string
	if err := r.admin.QueryRow(ctx, `
		SELECT (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY a.attnum)
		          FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped),
		       (SELECT coalesce(string_agg(pg_get_constraintdef(c.oid), '; '), '') FROM pg_constraint c WHERE c.conrelid = $1::regclass),
		       (SELECT string_agg(pg_get_indexdef(i.indexrelid), '; ') FROM pg_index i WHERE i.indrelid = $1::regclass),
		       (SELECT coalesce(string_agg(g.tgname, '; '), '') FROM pg_trigger g WHERE g.tgrelid = $1::regclass)`,
		r.table("seed_lease")).Scan(&cols, &cons, &idx, &trig); err != nil {
		t.Fatal(err)
	}
	if want := "account_id text not null, session_id text not null, run_id uuid not null, expires_at timestamp with time zone not null"; cols != want {
		t.Errorf("seed_lease's columns: %s, want %s", cols, want)
	}
	if want := "PRIMARY KEY (account_id, session_id)"; cons != want {
		t.Errorf("seed_lease's constraints: %q, want only %q", cons, want)
	}
	if strings.Count(idx, "CREATE") != 1 || trig != "" {
		t.Errorf("seed_lease's indexes %q and triggers %q, want its primary key's only", idx, trig)
	}

	key, run := r.keys("seed", 1)[0], uuid.New()
	if ok, err := seedAcquire(r)(ctx, r.admin, key, run, time.Minute); err != nil || !ok {
		t.Fatalf("the seed's acquire = %v, %v; want granted", ok, err)
	}
	if ok, err := seedAcquire(r)(ctx, r.admin, key, uuid.New(), time.Minute); err != nil || ok {
		t.Errorf("the seed's acquire of a held key = %v, %v; want refused", ok, err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{seedRenewSQL(r), []any{key.Account, key.Session, run, time.Minute}},
		{seedReleaseSQL(r), []any{key.Account, key.Session, run}},
	} {
		if tag, err := r.admin.Exec(ctx, q.sql, q.args...); err != nil || tag.RowsAffected() != 1 {
			t.Errorf("%s: %v, %v; want one row", q.sql, tag, err)
		}
	}
}
