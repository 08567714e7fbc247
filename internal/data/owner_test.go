package data_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// leaseOwners returns the owner of every table, sequence, type and function
// in schema lease, by object.
func leaseOwners(t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT c.oid::regclass::text, c.relowner::regrole::text FROM pg_class c
		 WHERE c.relnamespace = 'lease'::regnamespace AND c.relkind IN ('r', 'S', 'c')
		UNION ALL
		SELECT p.oid::regprocedure::text, p.proowner::regrole::text FROM pg_proc p
		 WHERE p.pronamespace = 'lease'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var obj, owner string
		if err := rows.Scan(&obj, &owner); err != nil {
			t.Fatal(err)
		}
		out[obj] = owner
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found %d lease objects, want the whole schema", len(out))
	}
	return out
}

// wantOwnedBy fails unless every lease object is owned by owner.
func wantOwnedBy(t *testing.T, conn *pgx.Conn, owner string) {
	t.Helper()
	for obj, got := range leaseOwners(t, conn) {
		if got != owner {
			t.Errorf("%s is owned by %s, want %s", obj, got, owner)
		}
	}
}

// TestDefinerFunctionsDoNotRunAsSuperuser: migrated by a superuser (as the
// tests' template is), the objects, and so the SECURITY DEFINER functions,
// belong to lease_owner, which cannot log in and has no attribute: a hole in
// a function no longer hands out superuser. Before, they belonged to the
// migrating superuser. Also after an upgrade from version 1, whose objects
// the superuser owned.
func TestDefinerFunctionsDoNotRunAsSuperuser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := pgtest.New(t).Conn(t)
	var super, login, createrole, createdb, bypass bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper, rolcanlogin, rolcreaterole, rolcreatedb, rolbypassrls
		FROM pg_roles WHERE rolname = 'lease_owner'`).Scan(&super, &login, &createrole, &createdb, &bypass); err != nil {
		t.Fatalf("read lease_owner: %v", err)
	}
	if super || login || createrole || createdb || bypass {
		t.Errorf("lease_owner: superuser %v login %v createrole %v createdb %v bypassrls %v, want none",
			super, login, createrole, createdb, bypass)
	}
	wantOwnedBy(t, conn, "lease_owner")

	upgraded := pgtest.NewEmpty(t).Conn(t)
	createV1(t, upgraded)
	if err := data.Migrate(ctx, upgraded); err != nil {
		t.Fatal(err)
	}
	wantOwnedBy(t, upgraded, "lease_owner")
}

// migrator creates a login role with attrs that may create objects in db,
// and returns a connection to db as that role.
func migrator(t *testing.T, db pgtest.DB, attrs string) (*pgx.Conn, string) {
	t.Helper()
	ctx := context.Background()
	dsn, name := pgtest.Login(t, db, "")
	admin := db.Conn(t)
	for _, sql := range []string{
		fmt.Sprintf("ALTER ROLE %s %s", pgx.Identifier{name}.Sanitize(), attrs),
		fmt.Sprintf("GRANT CREATE ON DATABASE %s TO %s", pgx.Identifier{db.Name}.Sanitize(), pgx.Identifier{name}.Sanitize()),
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn, name
}

// TestMigrateAsNonSuperuser migrates as the two kinds of role
// docs/production.md names: one with CREATEROLE (the objects go to
// lease_owner, and it becomes a member so it can migrate again) and one
// without (it keeps owning what it created). Either way the protocol works
// for a lease_app afterwards.
func TestMigrateAsNonSuperuser(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		attrs      string
		wantLeases string // "" means the migrating role
	}{
		{"CREATEROLE", "lease_owner"},
		{"NOCREATEROLE", ""},
	} {
		t.Run(tt.attrs, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.NewEmpty(t)
			conn, name := migrator(t, db, tt.attrs)
			for i := range 2 {
				if err := data.Migrate(ctx, conn); err != nil {
					t.Fatalf("Migrate #%d as a %s role: %v", i+1, tt.attrs, err)
				}
			}
			want := tt.wantLeases
			if want == "" {
				want = name
			}
			wantOwnedBy(t, conn, want)

			dsn, _ := pgtest.Login(t, db, "lease_app")
			s, err := data.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			k, run := data.Key{Account: "a", Session: "s"}, uuid.New()
			if _, err := s.Acquire(ctx, k, run, time.Minute, "app"); err != nil {
				t.Fatalf("Acquire as a lease_app after migrating as a %s role: %v", tt.attrs, err)
			}
			if ok, err := s.Release(ctx, k, run); err != nil || !ok {
				t.Fatalf("Release = %v, %v", ok, err)
			}
		})
	}
}

// TestSuperuserMigratesWhatAnotherRoleOwned: a database migrated first by a
// role without CREATEROLE (it owns every object) is migrated later by a
// superuser, which hands everything to lease_owner: the partitioned history
// and each of its partitions too (a partitioned table depends on itself and
// a partition on its parent, which an identity sequence's filter took for
// objects that move with their table), so the rest of the migration, run
// as lease_owner, may alter them.
func TestSuperuserMigratesWhatAnotherRoleOwned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn, _ := migrator(t, db, "NOCREATEROLE")
	if err := data.Migrate(ctx, conn); err != nil {
		t.Fatalf("Migrate as a role without CREATEROLE: %v", err)
	}
	super := db.Conn(t)
	if err := data.Migrate(ctx, super); err != nil {
		t.Fatalf("Migrate as a superuser after it: %v", err)
	}
	wantOwnedBy(t, super, "lease_owner")
	rows, err := super.Query(ctx, `SELECT c.oid::regclass::text FROM pg_class c
		WHERE c.relnamespace = 'lease'::regnamespace AND c.relkind IN ('p', 'r') AND c.relowner <> 'lease_owner'::regrole`)
	if err != nil {
		t.Fatal(err)
	}
	others, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(others) != 0 {
		t.Errorf("tables not owned by lease_owner after the superuser's migrate: %v (%v)", others, err)
	}
}
