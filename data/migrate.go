package data

import (
	"context"

	"github.com/jackc/pgx/v5"

	impl "github.com/leasetop/leasetop/internal/data"
)

// Migrate creates or upgrades the lease schema in one transaction and records
// its version. It is idempotent, and safe to run from several processes at
// once. It refuses to touch a schema newer than this leasetop. Coming from an
// older version it also runs that version's one-time steps (sql.Upgrade), in
// the same transaction. It is MigrateWith with the zero MigrateOptions.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	return impl.Migrate(ctx, conn)
}

// MigrateWith is Migrate with options. It returns the version it found: 0
// for a database without the schema.
//
// It adopts nothing it did not create: a schema lease that no migration
// made, and anything in the schema that the files do not create (an
// operator, a trigger, a rule, a policy, a function, a constraint on a
// domain, code of another schema that an object there uses), or an event
// trigger whose function a role below a superuser owns, make it return a
// *ForeignError having changed nothing; it looks again before its commit,
// for what code that ran during it made. Grants on the schema and its
// objects it takes back, all but the owner's, and grants its own again.
//
// Whoever runs it, and however the database or the role is configured, the
// migration resolves names in pg_catalog only (the search_path is pinned for
// its transaction, row security is off, strings are standard), so nothing a
// lower role may create in public or in a schema named like a role runs as
// the migrating role. Once the objects belong to lease_owner, everything that
// writes them runs as lease_owner (SET LOCAL ROLE), so nothing lease_owner
// could have planted on them runs with the migrating role's rights either.
func MigrateWith(ctx context.Context, conn *pgx.Conn, opts MigrateOptions) (from int, err error) {
	return impl.MigrateWith(ctx, conn, opts)
}

// MigrateOptions tunes MigrateWith. The zero value is Migrate's.
type MigrateOptions = impl.MigrateOptions

// MigrateProgress is what a migration is doing: the SQL file it applies,
// which attempt it is, and what its server process does (Activity).
type MigrateProgress = impl.MigrateProgress

// MigrateBlockedError is MigrateWith giving up on locks that other sessions
// held for longer than its Wait.
type MigrateBlockedError = impl.MigrateBlockedError

// ForeignError is a migration refused, with nothing changed, because schema
// lease holds what leasetop did not create, or because code a role below a
// superuser may change would run as the migrating role (an event trigger).
//
// Migrate refuses code it did not create rather than dropping it: an
// operator, a trigger, a rule or a policy in the schema runs as whoever
// uses the lease objects (lease_owner, the functions' callers), so someone
// put it there either to attack or for a reason of their own; either way an
// operator decides, knowing who owns it. What only grants rights (GRANT, a
// default privilege) migrate takes back itself, on every run, and grants
// its own again (sql/roles.sql).
type ForeignError = impl.ForeignError

// SchemaVersion returns the recorded lease schema version, 0 when there is
// no lease schema.
func SchemaVersion(ctx context.Context, q Querier) (int, error) {
	return impl.SchemaVersion(ctx, q)
}
