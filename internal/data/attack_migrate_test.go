package data_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// pwn is a function named name that records who ran it in public.ran_as
// and, run as anyone who could, makes attacker a superuser and a member of
// pg_execute_server_program (COPY … TO PROGRAM: a shell as the OS user).
func pwn(name, attacker string) string {
	return fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.ran_as VALUES (current_user::text, 'ran');
			IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
				EXECUTE 'ALTER ROLE %[2]s SUPERUSER';
			END IF;
			IF (SELECT rolcreaterole FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
				EXECUTE 'GRANT pg_execute_server_program TO %[2]s';
			END IF;
			RETURN true;
		EXCEPTION WHEN OTHERS THEN
			INSERT INTO public.ran_as VALUES (current_user::text, SQLERRM);
			RETURN true;
		END $$`, name, pgx.Identifier{attacker}.Sanitize())
}

// ranAs sets up public.ran_as, where the payload records each run.
func ranAs(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	for _, sql := range []string{
		`CREATE TABLE IF NOT EXISTS public.ran_as (who text, note text)`,
		`GRANT INSERT, SELECT ON public.ran_as TO PUBLIC`,
	} {
		if _, err := admin.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
}

// wantNothingGained fails if attacker became a superuser or a member of
// pg_execute_server_program, or if the payload ran as any role but the ones
// allowed.
func wantNothingGained(t *testing.T, admin *pgx.Conn, attacker string, allowed ...string) {
	t.Helper()
	ctx := context.Background()
	var super, program bool
	if err := admin.QueryRow(ctx, `SELECT rolsuper, pg_has_role(rolname, 'pg_execute_server_program', 'MEMBER')
		FROM pg_roles WHERE rolname = $1`, attacker).Scan(&super, &program); err != nil {
		t.Fatal(err)
	}
	if super || program {
		t.Errorf("%s gained superuser %v, pg_execute_server_program %v", attacker, super, program)
	}
	rows, err := admin.Query(ctx, `SELECT who, note FROM public.ran_as`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var who, note string
		if err := rows.Scan(&who, &note); err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, a := range allowed {
			ok = ok || who == a
		}
		if !ok {
			t.Errorf("planted code ran as %s (%s)", who, note)
		}
	}
}

// resetAttacker undoes what a successful attack gave attacker, so its login
// can be dropped and the next subtest starts clean.
func resetAttacker(t *testing.T, admin *pgx.Conn, attacker string) {
	t.Helper()
	id := pgx.Identifier{attacker}.Sanitize()
	for _, sql := range []string{"ALTER ROLE " + id + " NOSUPERUSER", "REVOKE pg_execute_server_program FROM " + id, "TRUNCATE public.ran_as"} {
		if _, err := admin.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrateResolvesNothingALowerRoleWrites: a lease_app login that owns
// its database (so, on PostgreSQL 15, may CREATE in public and set the
// database's search_path) plants a better-matching or same-named twin of
// every function and operator migrate calls, in public and in a schema named
// like the migrating role ("$user"), and puts both first in the database's
// search_path. Then a superuser and a CREATEROLE role each migrate, a new
// database and a migrated one: the planted code never runs, and nobody gains
// anything. Before, roles.sql's pg_has_role('lease_app', 'lease_reader',
// 'MEMBER') ran public.pg_has_role(text, text, text) as the migrating role.
func TestMigrateResolvesNothingALowerRoleWrites(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		migrated bool
		attrs    string // the migrating login's attributes; "" is the superuser
	}{
		{"superuser/new", false, ""},
		{"superuser/again", true, ""},
		{"createrole/new", false, "CREATEROLE"},
		{"createrole/again", true, "CREATEROLE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			if tt.migrated {
				db = pgtest.New(t)
			}
			admin := db.Conn(t)
			ranAs(t, admin)
			migrating, name := admin, ""
			if tt.attrs != "" {
				migrating, name = migrator(t, db, tt.attrs)
			} else if err := admin.QueryRow(ctx, `SELECT current_user::text`).Scan(&name); err != nil {
				t.Fatal(err)
			}

			dsn, attacker := pgtest.Login(t, db, "lease_app")
			t.Cleanup(func() { resetAttacker(t, admin, attacker) })
			for _, sql := range []string{
				"GRANT CREATE ON DATABASE " + pgx.Identifier{db.Name}.Sanitize() + " TO " + pgx.Identifier{attacker}.Sanitize(),
				"GRANT CREATE ON SCHEMA public TO " + pgx.Identifier{attacker}.Sanitize(),
			} {
				if _, err := admin.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			evil, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer evil.Close(ctx)
			plant := []string{
				"CREATE SCHEMA " + pgx.Identifier{name}.Sanitize(),
				pwn("public.pwn", attacker),
			}
			// Twins of what the migration's SQL calls with loose types, or by
			// the same signature (they win when their schema comes first).
			for _, schema := range []string{"public", pgx.Identifier{name}.Sanitize()} {
				for _, fn := range []string{
					"pg_has_role(a text, b text, c text) RETURNS boolean",
					"pg_has_role(a text, b text) RETURNS boolean",
					"pg_has_role(a name, b name, c text) RETURNS boolean",
					"pg_has_role(a name, c text) RETURNS boolean",
					"to_regrole(a text) RETURNS regrole",
					"to_regtype(a text) RETURNS regtype",
					"to_regclass(a text) RETURNS regclass",
					"format(a text, b text) RETURNS text",
					"format(a text, b text, c text) RETURNS text",
					"set_config(a text, b text, c boolean) RETURNS text",
					"pg_advisory_xact_lock(a bigint) RETURNS void",
					"clock_timestamp() RETURNS timestamptz",
					"octet_length(a text) RETURNS integer",
				} {
					ret := fn[strings.LastIndex(fn, " ")+1:]
					body := "SELECT NULL::" + ret + " FROM public.pwn()"
					if ret == "boolean" {
						body = "SELECT public.pwn()"
					}
					plant = append(plant, fmt.Sprintf("CREATE FUNCTION %s.%s LANGUAGE sql AS $$ %s $$", schema, fn, body))
				}
				for _, op := range []string{"=(name, name)", "=(text, text)", "<>(oid, oid)", "=(oid, oid)", "<>(oid, regrole)"} {
					l, r, _ := strings.Cut(op[strings.Index(op, "(")+1:len(op)-1], ", ")
					sym := op[:strings.Index(op, "(")]
					fn := fmt.Sprintf("%s.op_%d", schema, len(plant))
					plant = append(plant,
						fmt.Sprintf("CREATE FUNCTION %s(a %s, b %s) RETURNS boolean LANGUAGE sql AS $$ SELECT public.pwn() $$", fn, l, r),
						fmt.Sprintf("CREATE OPERATOR %s.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)", schema, sym, l, r, fn))
				}
			}
			plant = append(plant, fmt.Sprintf("ALTER DATABASE %s SET search_path = %s, public, pg_catalog",
				pgx.Identifier{db.Name}.Sanitize(), pgx.Identifier{name}.Sanitize()))
			if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db.Name}.Sanitize()+" OWNER TO "+pgx.Identifier{attacker}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_, _ = admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db.Name}.Sanitize()+" OWNER TO CURRENT_USER")
			})
			for _, sql := range plant {
				if _, err := evil.Exec(ctx, sql); err != nil {
					t.Fatalf("plant %q: %v", firstLine(sql), err)
				}
			}

			// A new session, so the database's search_path applies to it.
			migrating = reconnect(t, migrating)
			var path string
			if err := migrating.QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil || !strings.Contains(path, "public, pg_catalog") {
				t.Fatalf("the migrating session's search_path is %q (%v), want the planted one", path, err)
			}
			for i := range 2 {
				if err := data.Migrate(ctx, migrating); err != nil {
					t.Fatalf("Migrate #%d: %v", i+1, err)
				}
			}
			if _, err := data.MigrateWith(ctx, migrating, data.MigrateOptions{NotifyRenewals: new(true)}); err != nil {
				t.Fatalf("MigrateWith NotifyRenewals: %v", err)
			}
			wantNothingGained(t, admin, attacker)
		})
	}
}

// reconnect opens a new connection with conn's configuration, closed when t
// ends.
func reconnect(t *testing.T, conn *pgx.Conn) *pgx.Conn {
	t.Helper()
	c, err := pgx.ConnectConfig(context.Background(), conn.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestMigrateRunsNothingLeaseOwnerPlanted: lease_owner is a wall; a hole in
// it (a login that may SET ROLE lease_owner, standing for any way to run SQL
// as the functions' owner) must hand out no more than the lease tables. That
// login plants code on what every migrate writes or calls: a trigger on
// lease.schema_version, a row-security policy and a column default there, and
// lease.set_notify_renewals replaced by a SECURITY INVOKER twin. Before, the
// trigger ran as the migrating superuser; then as lease_owner.
// Now a superuser's and a CREATEROLE role's migrate refuse what
// leasetop did not create, naming it, before anything runs; once it is
// removed, the twin, which passes for leasetop's function, is replaced
// before --notify-renewals calls it: the planted code never runs.
func TestMigrateRunsNothingLeaseOwnerPlanted(t *testing.T) {
	t.Parallel()
	for _, attrs := range []string{"", "CREATEROLE"} {
		t.Run(cmp.Or(attrs, "superuser"), func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			admin := db.Conn(t)
			ranAs(t, admin)
			migrating := admin
			if attrs != "" {
				migrating, _ = migrator(t, db, attrs)
			}
			dsn, attacker := pgtest.Login(t, db, "lease_app")
			t.Cleanup(func() { resetAttacker(t, admin, attacker) })
			id := pgx.Identifier{attacker}.Sanitize()
			if _, err := admin.Exec(ctx, "GRANT lease_owner TO "+id); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = admin.Exec(ctx, "REVOKE lease_owner FROM "+id) })
			evil, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer evil.Close(ctx)
			for _, sql := range []string{
				`SET ROLE lease_owner`,
				pwn("lease.pwn", attacker),
				`CREATE FUNCTION lease.pwn_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM lease.pwn(); RETURN NEW; END $$`,
				`CREATE TRIGGER pwn BEFORE INSERT OR UPDATE ON lease.schema_version FOR EACH ROW EXECUTE FUNCTION lease.pwn_trigger()`,
				`ALTER TABLE lease.schema_version ENABLE ROW LEVEL SECURITY`,
				`CREATE POLICY pwn ON lease.schema_version USING (lease.pwn()) WITH CHECK (lease.pwn())`,
				`ALTER TABLE lease.schema_version ALTER COLUMN applied_at SET DEFAULT (CASE WHEN lease.pwn() THEN clock_timestamp() END)`,
				`CREATE OR REPLACE FUNCTION lease.set_notify_renewals(enabled boolean) RETURNS void
					LANGUAGE plpgsql SECURITY INVOKER AS $$ BEGIN PERFORM lease.pwn(); END $$`,
			} {
				if _, err := evil.Exec(ctx, sql); err != nil {
					t.Fatalf("plant %q: %v", firstLine(sql), err)
				}
			}
			wantForeign(t, data.Migrate(ctx, migrating), false, "trigger pwn on lease.schema_version",
				"policy pwn on lease.schema_version", "function lease.pwn()", "table lease.schema_version with row security on")
			plant(t, admin,
				`DROP FUNCTION lease.pwn_trigger() CASCADE`,
				`DROP FUNCTION lease.pwn() CASCADE`, // the policy and the default
				`ALTER TABLE lease.schema_version DISABLE ROW LEVEL SECURITY`,
				`ALTER TABLE lease.schema_version ALTER COLUMN applied_at SET DEFAULT clock_timestamp()`)
			if err := data.Migrate(ctx, migrating); err != nil {
				t.Fatalf("Migrate once the foreign objects are gone: %v", err)
			}
			if _, err := data.MigrateWith(ctx, migrating, data.MigrateOptions{NotifyRenewals: new(false)}); err != nil {
				t.Fatalf("MigrateWith NotifyRenewals: %v", err)
			}
			var ran int
			if err := admin.QueryRow(ctx, `SELECT count(*) FROM public.ran_as`).Scan(&ran); err != nil || ran != 0 {
				t.Errorf("the planted code ran %d times (%v), want never", ran, err)
			}
			wantNothingGained(t, admin, attacker)
		})
	}
}
