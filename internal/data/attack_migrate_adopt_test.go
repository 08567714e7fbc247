package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// databaseOwner makes a new lease_app login the owner of db (PostgreSQL 15:
// it may then create schemas, and objects in public once granted) and
// returns a connection as it. The database goes back to the superuser when
// t ends, so that the login can be dropped.
func databaseOwner(t *testing.T, db pgtest.DB, admin *pgx.Conn) (*pgx.Conn, string) {
	t.Helper()
	ctx := context.Background()
	dsn, role := pgtest.Login(t, db, "lease_app")
	dbName := pgx.Identifier{db.Name}.Sanitize()
	for _, sql := range []string{
		"ALTER DATABASE " + dbName + " OWNER TO " + pgx.Identifier{role}.Sanitize(),
		"GRANT CREATE ON SCHEMA public TO " + pgx.Identifier{role}.Sanitize(),
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = admin.Exec(ctx, "ALTER DATABASE "+dbName+" OWNER TO CURRENT_USER") })
	return connect(t, dsn), role
}

// plant runs each statement on conn, failing the test at the first error.
func plant(t *testing.T, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, sql := range stmts {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatalf("plant %q: %v", firstLine(sql), err)
		}
	}
}

// wantForeign fails unless err is a *ForeignError on one line whose
// message names each of want, and returns it (nil when it is not one: the
// test goes on, to say what ran).
func wantForeign(t *testing.T, err error, premade bool, want ...string) *data.ForeignError {
	t.Helper()
	var fe *data.ForeignError
	if !errors.As(err, &fe) {
		t.Errorf("Migrate = %v, want a *ForeignError", err)
		return nil
	}
	msg := err.Error()
	if fe.Premade != premade || strings.Contains(msg, "\n") {
		t.Errorf("Migrate: %q (premade %v): want one line, premade %v", msg, fe.Premade, premade)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("Migrate: %q does not name %q", msg, w)
		}
	}
	return fe
}

// TestMigrateRefusesAPremadeSchema: a database owner (a
// lease_app login) creates schema lease before the first migrate, with an
// operator lease.= on its own lease.id_text, or with a lease.schema_version
// of its own that has a trigger. Before, migrate adopted the schema: it
// handed the attacker's objects to lease_owner and built on them, so the
// operator ran as lease_owner at the first renewal, and the trigger ran as
// lease_owner during the migration itself. Now a superuser's and a
// CREATEROLE role's migrate refuse in one line naming the owner and what is
// there, change nothing, and run nothing planted; once the schema is
// dropped, migrate creates its own.
func TestMigrateRefusesAPremadeSchema(t *testing.T) {
	t.Parallel()
	operator := []string{
		`CREATE SCHEMA lease`,
		`CREATE DOMAIN lease.id_text AS text`,
		pwn("lease.pwn", "ATTACKER"),
		`CREATE FUNCTION lease.pwn_eq(a lease.id_text, b text) RETURNS boolean LANGUAGE sql AS $$ SELECT lease.pwn() $$`,
		`CREATE OPERATOR lease.= (LEFTARG = lease.id_text, RIGHTARG = text, FUNCTION = lease.pwn_eq)`,
	}
	for _, tt := range []struct {
		name    string
		attrs   string // the migrating login's; "" is the superuser
		plant   []string
		premade bool
		want    []string
	}{
		{"operator/superuser", "", operator, true,
			[]string{"schema lease exists already", "holding 4 objects", "operator lease.=(lease.id_text,pg_catalog.text)"}},
		{"operator/createrole", "CREATEROLE", operator, true, []string{"schema lease exists already", "operator lease.="}},
		{"empty/superuser", "", []string{`CREATE SCHEMA lease`}, true, []string{"schema lease exists already", "and empty"}},
		// With a lease.schema_version of its own the schema passes for one
		// a migration made (by a role without CREATEROLE, which keeps
		// owning it): the check of every migrate finds the trigger, named
		// like one of leasetop's but on another table.
		{"trigger on schema_version", "", []string{
			`CREATE SCHEMA lease`,
			`CREATE TABLE lease.schema_version (version integer NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
				singleton boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton))`,
			`INSERT INTO lease.schema_version (version) VALUES (5)`,
			pwn("lease.pwn", "ATTACKER"),
			`CREATE FUNCTION lease.pwn_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM lease.pwn(); RETURN NEW; END $$`,
			`CREATE TRIGGER session_lease_acquired BEFORE INSERT OR UPDATE ON lease.schema_version FOR EACH ROW EXECUTE FUNCTION lease.pwn_trigger()`,
		}, false, []string{"trigger session_lease_acquired on lease.schema_version", "function lease.pwn_trigger()"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			admin := db.Conn(t)
			ranAs(t, admin)
			owner, attacker := databaseOwner(t, db, admin)
			t.Cleanup(func() { resetAttacker(t, admin, attacker) })
			for _, sql := range tt.plant {
				plant(t, owner, strings.ReplaceAll(sql, `"ATTACKER"`, pgx.Identifier{attacker}.Sanitize()))
			}
			migrating := admin
			if tt.attrs != "" {
				migrating, _ = migrator(t, db, tt.attrs)
			}

			fe := wantForeign(t, data.Migrate(ctx, migrating), tt.premade, tt.want...)
			if fe != nil && tt.premade && fe.Owner != attacker {
				t.Errorf("ForeignError.Owner = %q, want the schema's owner %q", fe.Owner, attacker)
			}
			var schemaOwner string
			var version bool
			if err := admin.QueryRow(ctx, `SELECT nspowner::regrole::text, to_regclass('lease.session_lease') IS NOT NULL
				FROM pg_namespace WHERE nspname = 'lease'`).Scan(&schemaOwner, &version); err != nil || schemaOwner != attacker || version {
				t.Errorf("after the refusal schema lease belongs to %q and has lease.session_lease %v (%v); want %q's, unchanged", schemaOwner, version, err, attacker)
			}
			wantNothingGained(t, admin, attacker)
			var ran int
			if err := admin.QueryRow(ctx, `SELECT count(*) FROM public.ran_as`).Scan(&ran); err != nil || ran != 0 {
				t.Errorf("planted code ran %d times (%v) during the refused migrate", ran, err)
			}

			plant(t, admin, `DROP SCHEMA lease CASCADE`)
			if err := data.Migrate(ctx, migrating); err != nil {
				t.Fatalf("Migrate once the schema is gone: %v", err)
			}
		})
	}
}

// TestMigrateTakesBackGrants: grants made by hand on
// schema lease and its objects survived every migrate: with GRANT USAGE,
// CREATE ON SCHEMA lease TO lease_app any app login planted lease.=; a
// default privilege for lease_owner gave lease_app every partition
// maintain_events made; and PUBLIC's default USAGE on the lease types let a
// database owner in lease_app create public.=(lease.id_text, text), which
// wins over text's = in the functions' comparisons. Now migrate takes back
// every right but the owner's, removes those default privileges and grants
// its own again: each of these is refused (42501) after a migrate, and the
// roles keep what roles.sql grants.
func TestMigrateTakesBackGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	admin := db.Conn(t)
	appDSN, app := pgtest.Login(t, db, "lease_app")
	readerDSN, _ := pgtest.Login(t, db, "lease_reader")
	plant(t, admin,
		`GRANT USAGE, CREATE ON SCHEMA lease TO lease_app`,
		`GRANT DELETE ON lease.event TO lease_app`,
		`GRANT UPDATE (expires_at) ON lease.session_lease TO lease_app`,
		`GRANT EXECUTE ON FUNCTION lease.force_release(text, text, uuid, text) TO lease_app`,
		`GRANT ALL ON SEQUENCE lease.fence_seq TO lease_reader WITH GRANT OPTION`,
		`ALTER DEFAULT PRIVILEGES FOR ROLE lease_owner IN SCHEMA lease GRANT ALL ON TABLES TO lease_app`,
		`GRANT CREATE ON SCHEMA public TO `+pgx.Identifier{app}.Sanitize(), // as a database owner has it
	)
	if err := data.Migrate(ctx, admin); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	var made string // a partition made after the migrate, by maintain_events as lease_owner
	if err := admin.QueryRow(ctx, `SELECT part FROM lease.maintain_events(NULL, 30) WHERE action = 'created' LIMIT 1`).Scan(&made); err != nil {
		t.Fatalf("maintain_events(NULL, 30) made no partition: %v", err)
	}

	appConn, reader := connect(t, appDSN), connect(t, readerDSN)
	for _, tt := range []struct {
		conn *pgx.Conn
		sql  string
	}{
		{appConn, `CREATE FUNCTION lease.pwn_eq(a text, b text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$`},
		{appConn, `CREATE FUNCTION public.pwn_eq(a lease.id_text, b text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$`},
		{appConn, `DELETE FROM lease.event`},
		{appConn, `DELETE FROM ` + made},
		{appConn, `UPDATE lease.session_lease SET expires_at = expires_at + interval '10 years'`},
		{appConn, `SELECT lease.force_release('acme', 'victim', NULL, 'mine now')`},
		{reader, `SELECT nextval('lease.fence_seq')`},
	} {
		_, err := tt.conn.Exec(ctx, tt.sql)
		if !errors.Is(data.Translate(err), data.ErrPermission) {
			t.Errorf("%s after the migrate: %v, want permission denied", firstLine(tt.sql), err)
		}
	}

	s := pgtest.OpenStore(t, appDSN, data.Options{})
	k := data.Key{Account: "acme", Session: "after"}
	run := uuid.New()
	mustAcquire(t, s, k, run, time.Minute)
	if ok, err := s.Release(ctx, k, run); err != nil || !ok {
		t.Errorf("the app's Release after the migrate = %v, %v", ok, err)
	}
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM lease.event`); err != nil {
		t.Errorf("the reader's SELECT after the migrate: %v", err)
	}
}

// TestMigrateRefusesForeignCode: code in schema lease
// that leasetop does not create runs as the lease roles, or as the
// migrating role: a row-security policy, a rule, an operator, a function, a
// trigger, a constraint added to a domain, a column default, all calling
// code a lower role owns; and an event trigger, which fires on migrate's
// own DDL as the migrating role, whose function such a role owns (it may
// replace its body); and a table and a type of names it does not make.
// Before, migrate kept them all (the default and the event trigger ran
// during it; the latter made the attacker a superuser). Now it refuses in
// one line naming the object, runs none of it, and migrates once the
// object is gone.
func TestMigrateRefusesForeignCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		plant     []string // as the superuser; ATTACKER is the attacker's role
		want      string
		remove    []string
		asOwnerOf bool // the attacker's function is public.pwn, which it owns
	}{
		{"policy", []string{
			`ALTER TABLE lease.session_lease ENABLE ROW LEVEL SECURITY`,
			`CREATE POLICY pwn ON lease.session_lease USING (public.pwn())`,
		}, "policy pwn on lease.session_lease", []string{
			`DROP POLICY pwn ON lease.session_lease`, `ALTER TABLE lease.session_lease DISABLE ROW LEVEL SECURITY`,
		}, true},
		{"row security alone", []string{`ALTER TABLE lease.event FORCE ROW LEVEL SECURITY`},
			"table lease.event with row security on", []string{`ALTER TABLE lease.event NO FORCE ROW LEVEL SECURITY`}, false},
		{"rule", []string{`CREATE RULE pwn AS ON DELETE TO lease.handover_ask DO ALSO SELECT public.pwn()`},
			"rule pwn on lease.handover_ask", []string{`DROP RULE pwn ON lease.handover_ask`}, true},
		{"operator", []string{
			`CREATE FUNCTION public.pwn_eq(a lease.id_text, b text) RETURNS boolean LANGUAGE sql AS $$ SELECT public.pwn() $$`,
			`CREATE OPERATOR lease.= (LEFTARG = lease.id_text, RIGHTARG = text, FUNCTION = public.pwn_eq)`,
		}, "operator lease.=(lease.id_text,pg_catalog.text)", []string{`DROP OPERATOR lease.= (lease.id_text, text)`}, true},
		{"function", []string{pwn("lease.pwn", "ATTACKER")}, "function lease.pwn()", []string{`DROP FUNCTION lease.pwn()`}, false},
		{"table", []string{`CREATE TABLE lease.stash (note text)`}, "table lease.stash", []string{`DROP TABLE lease.stash`}, false},
		{"type", []string{`CREATE TYPE lease.mood AS ENUM ('sad')`}, "type lease.mood", []string{`DROP TYPE lease.mood`}, false},
		{"overload", []string{
			`CREATE FUNCTION lease.check_key(a lease.id_text, b text) RETURNS void LANGUAGE sql AS $$ SELECT public.pwn() $$`,
		}, "function lease.check_key(lease.id_text,pg_catalog.text)", []string{`DROP FUNCTION lease.check_key(lease.id_text, text)`}, true},
		{"trigger", []string{
			`CREATE FUNCTION public.pwn_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM public.pwn(); RETURN NULL; END $$`,
			`CREATE TRIGGER pwn AFTER INSERT ON lease.session_lease FOR EACH ROW EXECUTE FUNCTION public.pwn_trigger()`,
		}, "trigger pwn on lease.session_lease", []string{`DROP TRIGGER pwn ON lease.session_lease`}, true},
		{"domain constraint", []string{
			`CREATE FUNCTION public.pwn_check(v text) RETURNS boolean LANGUAGE sql AS $$ SELECT public.pwn() $$`,
			`ALTER DOMAIN lease.holder_text ADD CONSTRAINT pwn CHECK (public.pwn_check(VALUE)) NOT VALID`,
		}, "domain constraint pwn on lease.holder_text", []string{`ALTER DOMAIN lease.holder_text DROP CONSTRAINT pwn`}, true},
		{"default", []string{
			`ALTER TABLE lease.schema_version ALTER COLUMN applied_at SET DEFAULT (CASE WHEN public.pwn() THEN clock_timestamp() END)`,
		}, "default value for lease.schema_version.applied_at using function public.pwn()", []string{
			`ALTER TABLE lease.schema_version ALTER COLUMN applied_at SET DEFAULT clock_timestamp()`,
		}, true},
		{"event trigger", []string{
			`CREATE FUNCTION public.pwn_event() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM public.pwn(); END $$`,
			`ALTER FUNCTION public.pwn_event() OWNER TO ATTACKER`,
			`CREATE EVENT TRIGGER pwn ON ddl_command_start EXECUTE FUNCTION public.pwn_event()`,
		}, "event trigger pwn, whose function public.pwn_event() belongs to", []string{`DROP EVENT TRIGGER pwn`}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := pgtest.New(t)
			admin := db.Conn(t)
			ranAs(t, admin)
			_, attacker := pgtest.Login(t, db, "lease_app")
			t.Cleanup(func() { resetAttacker(t, admin, attacker) })
			id := pgx.Identifier{attacker}.Sanitize()
			if tt.asOwnerOf {
				plant(t, admin, pwn("public.pwn", attacker), `ALTER FUNCTION public.pwn() OWNER TO `+id)
			}
			for _, sql := range tt.plant {
				plant(t, admin, strings.ReplaceAll(strings.ReplaceAll(sql, `"ATTACKER"`, id), "ATTACKER", id))
			}

			wantForeign(t, data.Migrate(ctx, admin), false, tt.want)
			wantNothingGained(t, admin, attacker)
			var ran int
			if err := admin.QueryRow(ctx, `SELECT count(*) FROM public.ran_as`).Scan(&ran); err != nil || ran != 0 {
				t.Errorf("planted code ran %d times (%v) during the refused migrate", ran, err)
			}

			plant(t, admin, tt.remove...)
			if err := data.Migrate(ctx, admin); err != nil {
				t.Fatalf("Migrate once %s is gone: %v", tt.name, err)
			}
		})
	}
}

// TestMigrateKeepsNothingPlantedCodeMade: code that passes
// the check before the migration can still run during it, as lease_owner: a
// CHECK on lease.maintenance (which partition.sql writes) calling
// lease.pending_key, replaced by a lease_owner login with a body that makes
// a SECURITY DEFINER lease.backdoor and a default privilege giving every
// table lease_owner makes from then on to PUBLIC; triggers.sql replaces
// pending_key only after. Before, both stayed. Now the check at the end of
// the migration finds them and nothing of the migration is kept; the code
// ran as lease_owner only.
func TestMigrateKeepsNothingPlantedCodeMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	admin := db.Conn(t)
	dsn, attacker := pgtest.Login(t, db, "")
	id := pgx.Identifier{attacker}.Sanitize()
	plant(t, admin,
		`GRANT lease_owner TO `+id,
		`CREATE SEQUENCE public.ran_lease_owner`, // nextval is not rolled back: it counts the runs of a refused migration
		`GRANT USAGE ON SEQUENCE public.ran_lease_owner TO PUBLIC`)
	t.Cleanup(func() { _, _ = admin.Exec(ctx, "REVOKE lease_owner FROM "+id) })
	plant(t, connect(t, dsn),
		`SET ROLE lease_owner`,
		`CREATE OR REPLACE FUNCTION lease.pending_key(account_id text, session_id text, pub uuid) RETURNS text
			LANGUAGE plpgsql AS $$
			BEGIN
				PERFORM nextval(format('public.%I', 'ran_' || current_user));
				IF to_regprocedure('lease.backdoor()') IS NULL THEN
					CREATE FUNCTION lease.backdoor() RETURNS void LANGUAGE sql SECURITY DEFINER AS 'DELETE FROM lease.event';
					ALTER DEFAULT PRIVILEGES IN SCHEMA lease GRANT ALL ON TABLES TO PUBLIC;
				END IF;
				RETURN '';
			END $$`,
		`ALTER TABLE lease.maintenance ADD CONSTRAINT pwn CHECK (lease.pending_key('a', 'b', NULL) IS NOT NULL) NOT VALID`,
		`DELETE FROM lease.maintenance`, // so that partition.sql's INSERT writes it again
	)

	wantForeign(t, data.Migrate(ctx, admin), false, "made while this migration ran", "function lease.backdoor()",
		"default acl for role lease_owner in schema lease on tables")
	var ran int64
	var backdoor, defaults bool
	if err := admin.QueryRow(ctx, `SELECT (SELECT last_value FROM public.ran_lease_owner),
		to_regprocedure('lease.backdoor()') IS NOT NULL, EXISTS (SELECT FROM pg_default_acl)`).Scan(&ran, &backdoor, &defaults); err != nil {
		t.Fatal(err)
	}
	if ran == 0 || backdoor || defaults {
		t.Errorf("after the refused migrate: the planted code ran as lease_owner %v, lease.backdoor kept %v, default privileges kept %v; want ran, nothing kept",
			ran > 0, backdoor, defaults)
	}
}
