package data_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestMigrateReadsWhatItCreates: migrate's check for foreign objects knows
// what the files create by reading them (CREATE OR REPLACE FUNCTION,
// CREATE TABLE IF NOT EXISTS, ...). Every function, table, type and trigger
// of a migrated schema is among what it read, so that the next migrate
// does not take one for foreign, and everything it read is there (but the
// old signatures the files drop), so that a way of writing them it cannot
// read shows here, not as a refused migrate.
func TestMigrateReadsWhatItCreates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.New(t).Conn(t)
	if _, err := data.MigrateWith(ctx, conn, data.MigrateOptions{NotifyRenewals: new(true)}); err != nil {
		t.Fatal(err) // with the renewal trigger, which a function creates
	}
	funcs, args, dropped, relations, types, triggers := data.CreatedByFiles()
	read := map[string]bool{}
	for i := range funcs {
		read[funcs[i]+"("+args[i]+")"] = true
	}
	query := func(sql string) []string {
		t.Helper()
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Spelled as the files spell them, to compare with what was read.
	for _, sig := range query(`SELECT p.proname || '(' || coalesce((SELECT string_agg(
			CASE WHEN a.t = 'timestamp with time zone' THEN 'timestamptz' ELSE a.t END, ',' ORDER BY a.i)
			FROM unnest(string_to_array(pg_catalog.oidvectortypes(p.proargtypes), ', ')) WITH ORDINALITY a(t, i)), '') || ')'
		FROM pg_proc p WHERE p.pronamespace = 'lease'::regnamespace`) {
		if !read[sig] {
			t.Errorf("function lease.%s is not among what migrate read from the files", sig)
		}
		delete(read, sig)
	}
	for sig := range read {
		if !slices.Contains(dropped, sig) {
			t.Errorf("migrate read function lease.%s from the files, but the migrated schema has none", sig)
		}
	}
	for _, tt := range []struct {
		what string
		read []string
		sql  string
	}{
		{"table or sequence", relations, `SELECT c.relname::text FROM pg_class c WHERE c.relnamespace = 'lease'::regnamespace
			AND (c.relkind IN ('r', 'p', 'S') AND NOT c.relispartition OR c.relname = 'event_default')
			AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i') AND c.relkind = 'S')`},
		{"type", types, `SELECT t.typname::text FROM pg_type t WHERE t.typnamespace = 'lease'::regnamespace
			AND (t.typtype = 'd' OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c')`},
		{"trigger", triggers, `SELECT g.tgname || ' ' || c.relname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
			WHERE c.relnamespace = 'lease'::regnamespace`},
	} {
		there := query(tt.sql)
		slices.Sort(there)
		want := slices.Sorted(slices.Values(tt.read))
		if !slices.Equal(there, want) {
			t.Errorf("%ss: the migrated schema has %q, migrate read %q from the files", tt.what, there, want)
		}
	}
}
