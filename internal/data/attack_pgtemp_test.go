package data_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestTempSchemaShadowingCannotEscalate logs in as lease_app and plants
// objects in its own temporary schema that shadow the built-in types and
// operators the SECURITY DEFINER functions use. PostgreSQL searches pg_temp
// before the pinned search_path unless pg_temp is listed explicitly (last), so
// without it the domain's CHECK runs as the functions' owner: the attacker
// becomes superuser, or rewinds the fence sequence.
func TestTempSchemaShadowingCannotEscalate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	dsn, login := pgtest.Login(t, db, "lease_app")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect as %s: %v", login, err)
	}
	defer conn.Close(ctx)

	// The payload records which role ran it, and tries both escalations.
	plant := []string{
		`CREATE TABLE pg_temp.ran_as (who text)`,
		fmt.Sprintf(`CREATE FUNCTION pg_temp.pwn(v pg_catalog.text) RETURNS pg_catalog.bool
			LANGUAGE plpgsql AS $$
			BEGIN
				INSERT INTO pg_temp.ran_as VALUES (current_user);
				IF current_user <> %s THEN
					EXECUTE 'ALTER ROLE %s SUPERUSER';
					PERFORM pg_catalog.setval('lease.fence_seq', 1);
				END IF;
				RETURN true;
			END $$`, quoteLiteral(login), pgx.Identifier{login}.Sanitize()),
		`CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.pwn(VALUE))`,
		`CREATE DOMAIN pg_temp.timestamptz AS pg_catalog.timestamptz CHECK (pg_temp.pwn(VALUE::pg_catalog.text))`,
		`CREATE FUNCTION pg_temp.eq(a pg_catalog.text, b pg_catalog.text) RETURNS pg_catalog.bool
			LANGUAGE sql AS 'SELECT pg_temp.pwn(a) AND a OPERATOR(pg_catalog.=) b'`,
		`CREATE OPERATOR pg_temp.= (LEFTARG = pg_catalog.text, RIGHTARG = pg_catalog.text, FUNCTION = pg_temp.eq)`,
	}
	for _, sql := range plant {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("plant %q: %v", firstLine(sql), err)
		}
	}
	owner := db.Conn(t)
	fenceBefore := probeFence(t, owner, "before")

	// Every entry point lease_app may call, each of which resolves types,
	// casts or operators (directly, in a trigger, or in event_json).
	calls := []string{
		`SELECT * FROM lease.acquire('acct', 'pwn', '00000000-0000-0000-0000-0000000000a1', '1 minute', 'h')`,
		`SELECT * FROM lease.acquire('acct', 'pwn', '00000000-0000-0000-0000-0000000000a2', '1 minute', 'h')`,
		`SELECT lease.renew('acct', 'pwn', '00000000-0000-0000-0000-0000000000a1', '1 minute')`,
		`SELECT lease.renew('acct', 'none', '00000000-0000-0000-0000-0000000000a1', '1 minute')`,
		`SELECT lease.check_fence('acct', 'pwn', '00000000-0000-0000-0000-0000000000a1', 1)`,
		`SELECT lease.release('acct', 'pwn', '00000000-0000-0000-0000-0000000000a1')`,
	}
	for _, sql := range calls {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s as %s: %v", sql, login, err)
		}
	}

	var super bool
	if err := owner.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = $1`, login).Scan(&super); err != nil {
		t.Fatal(err)
	}
	if super {
		t.Errorf("%s is superuser after calling the lease functions with a shadowing pg_temp", login)
	}
	if after := probeFence(t, owner, "after"); after <= fenceBefore+1 {
		t.Errorf("fence after the attack = %d, want > %d: the payload rewound the fence sequence", after, fenceBefore+1)
	}
	rows, err := conn.Query(ctx, `SELECT DISTINCT who FROM pg_temp.ran_as WHERE who <> $1`, login)
	if err != nil {
		t.Fatal(err)
	}
	others, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(others) > 0 {
		t.Errorf("the attacker's pg_temp code ran as %v inside the lease functions, want never", others)
	}
}

// probeFence acquires a fresh key as the owner and returns its fence.
func probeFence(t *testing.T, owner *pgx.Conn, session string) int64 {
	t.Helper()
	var fence int64
	err := owner.QueryRow(context.Background(),
		`SELECT fence FROM lease.acquire('probe', $1, gen_random_uuid(), '1 minute', '')`, session).Scan(&fence)
	if err != nil {
		t.Fatalf("probe acquire: %v", err)
	}
	return fence
}

func quoteLiteral(s string) string {
	return "'" + s + "'" // test role names are [a-z0-9_]
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
