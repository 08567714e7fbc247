package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// TestToolsResolveNothingALowerRoleWrites: a lease_app login that owns its
// database plants, in public, twins of the functions and operators the
// tools' queries call (same signatures, each also making the attacker a
// superuser when a superuser runs it), and sets the database's search_path
// to put public before pg_catalog. A superuser then runs ls, events and
// release, directly and through a real PgBouncer: the planted code never
// runs. Directly the tools pin their search_path at start-up; through the
// pooler, which refuses that parameter, they refuse the session in one line.
// Before, ls alone made the attacker a superuser.
func TestToolsResolveNothingALowerRoleWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	admin := db.Conn(t)
	acquire(t, admin, "acme", "held", "1 hour", "phone")
	dsn, attacker := pgtest.Login(t, db, "lease_app")
	id := pgx.Identifier{attacker}.Sanitize()
	dbID := pgx.Identifier{db.Name}.Sanitize()
	for _, sql := range []string{
		`CREATE TABLE public.ran_as (who text)`,
		`GRANT INSERT, SELECT ON public.ran_as TO PUBLIC`,
		"GRANT CREATE ON SCHEMA public TO " + id,
		"ALTER DATABASE " + dbID + " OWNER TO " + id,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, sql := range []string{"ALTER DATABASE " + dbID + " OWNER TO CURRENT_USER", "ALTER ROLE " + id + " NOSUPERUSER"} {
			_, _ = admin.Exec(ctx, sql)
		}
	})
	evil, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close(ctx)
	plant := []string{fmt.Sprintf(`CREATE FUNCTION public.pwn() RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.ran_as VALUES (current_user::text);
			IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
				EXECUTE 'ALTER ROLE %s SUPERUSER';
			END IF;
			RETURN true;
		END $$`, id)}
	// Twins that return what the originals do, so the tools work on and the
	// attack goes unnoticed.
	for _, fn := range []string{
		"clock_timestamp() RETURNS timestamptz",
		"now() RETURNS timestamptz",
		"pg_backend_pid() RETURNS integer",
		"pg_is_in_recovery() RETURNS boolean",
		"current_database() RETURNS name",
		"pg_last_xact_replay_timestamp() RETURNS timestamptz",
		"current_schemas(boolean) RETURNS name[]",
	} {
		name, args := fn[:strings.Index(fn, "(")], fn[strings.Index(fn, "(")+1:strings.Index(fn, ")")]
		call := "pg_catalog." + name + "()"
		if args != "" {
			call = "pg_catalog." + name + "($1)"
		}
		plant = append(plant, fmt.Sprintf("CREATE FUNCTION public.%s LANGUAGE sql AS $$ SELECT CASE WHEN public.pwn() THEN %s END $$", fn, call))
	}
	plant = append(plant,
		`CREATE FUNCTION public.text_eq(a text, b text) RETURNS boolean LANGUAGE sql AS $$ SELECT public.pwn() AND a OPERATOR(pg_catalog.=) b $$`,
		`CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.text_eq)`,
		"ALTER DATABASE "+dbID+" SET search_path = public, pg_catalog",
	)
	for _, sql := range plant {
		if _, err := evil.Exec(ctx, sql); err != nil {
			t.Fatalf("plant %q: %v", strings.SplitN(sql, "\n", 2)[0], err)
		}
	}

	check := func(t *testing.T) {
		t.Helper()
		var super bool
		var ran int
		if err := admin.QueryRow(ctx, `SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = $1), (SELECT count(*) FROM public.ran_as)`, attacker).Scan(&super, &ran); err != nil {
			t.Fatal(err)
		}
		if super || ran > 0 {
			t.Errorf("the planted code ran %d times; the attacker is superuser: %v", ran, super)
		}
	}
	t.Run("direct", func(t *testing.T) {
		for _, args := range [][]string{
			{"ls"}, {"ls", "--json"}, {"events", "--limit", "5"},
			{"release", "--account", "acme", "--session", "held", "--reason", "audit"},
		} {
			if out, errOut, code := leasetop(ctx, db.URL, args...); code != 0 {
				t.Errorf("leasetop %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
			}
		}
		check(t)
	})
	t.Run("pooler", func(t *testing.T) {
		b := pgtest.Bouncer(t, pgserver.BouncerOptions{})
		out, errOut, code := leasetop(ctx, db.Via(t, b), "ls")
		want := "leasetop: the session's search_path (public, pg_catalog) puts public before pg_catalog"
		if code == 0 || !strings.HasPrefix(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("ls through PgBouncer: exit %d, stdout %q, stderr %q; want one line starting %q", code, out, errOut, want)
		}
		check(t)
	})
}
