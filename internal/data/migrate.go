package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	leasesql "github.com/leasetop/leasetop/sql"
)

func currentVersion() int { return leasesql.Version }

// Owner returns the role that owns the lease functions, as whom the
// SECURITY DEFINER ones run: lease_owner when migrate could create it, else
// the role that migrated.
func Owner(ctx context.Context, q Querier) (string, error) {
	var owner string
	err := q.QueryRow(ctx, `SELECT p.proowner::pg_catalog.regrole::pg_catalog.text FROM pg_catalog.pg_proc p
		WHERE p.oid OPERATOR(pg_catalog.=) 'lease.acquire(pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.interval, pg_catalog.text)'::pg_catalog.regprocedure`).Scan(&owner)
	if err != nil {
		return "", fmt.Errorf("read the lease functions' owner: %w", translate(err))
	}
	return owner, nil
}

// migrateLock is the advisory lock key that serialises concurrent migrations.
const migrateLock = 0x6c65617365746f70 // "leasetop"

// MigrateOptions tunes MigrateWith. The zero value is Migrate's.
type MigrateOptions struct {
	// NotifyRenewals, when not nil, turns per-renewal notifications on or
	// off (lease.set_notify_renewals) in the migration's transaction, as the
	// objects' owner. Nil leaves the setting as it is (off on a new schema).
	NotifyRenewals *bool
	// Wait bounds how long the migration waits for locks that other
	// sessions hold: the advisory lock that serialises migrations, and the
	// tables' locks behind open transactions. It waits lockAttempt at a time,
	// so live traffic that queues behind a waiting migration waits no longer
	// than that, and gives up after Wait with a *MigrateBlockedError naming
	// the sessions in its way. Zero means 30 seconds.
	Wait time.Duration
	// Progress, when set, is told what the migration does while it runs:
	// each SQL file as it starts, and four times a second what the server
	// process does (a lock it waits for, an index it builds), read on a
	// connection of its own (migrate_progress.go), from another goroutine.
	Progress func(MigrateProgress)

	watch *migrateWatch // set by MigrateWith when Progress is
}

const (
	defaultMigrateWait = 30 * time.Second
	// lockAttempt is how long one attempt waits for a lock (lock_timeout).
	lockAttempt = 500 * time.Millisecond
)

// Migrate creates or upgrades the lease schema in one transaction and records
// its version. It is idempotent, and safe to run from several processes at
// once. It refuses to touch a schema newer than this leasetop. Coming from an
// older version it also runs that version's one-time steps (sql.Upgrade), in
// the same transaction. It is MigrateWith with the zero MigrateOptions.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	_, err := MigrateWith(ctx, conn, MigrateOptions{})
	return err
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
	wait := opts.Wait
	if wait <= 0 {
		wait = defaultMigrateWait
	}
	deadline := time.Now().Add(wait)
	backoff := lockAttempt
	if opts.Progress != nil {
		opts.watch = watchMigration(ctx, conn, opts.Progress)
		defer opts.watch.stop()
	}
	for attempt := 1; ; attempt++ {
		if opts.watch != nil {
			opts.watch.startAttempt(attempt)
		}
		from, err = migrateOnce(ctx, conn, opts)
		if !isLockTimeout(err) {
			return from, err
		}
		if time.Now().Add(backoff).After(deadline) {
			return 0, blocked(ctx, conn, wait)
		}
		select { // let the traffic that queued behind this attempt through
		case <-ctx.Done():
			return 0, fmt.Errorf("migrate: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*lockAttempt)
	}
}

// migrateSettings pins, for the migration's transaction only, what the
// session's configuration (a database's or role's defaults, a DSN's options)
// could otherwise decide: where names resolve (pg_catalog, then pg_temp for
// relations only: functions and operators are never looked up there), that
// row security errors out instead of running a policy's code as the
// migrating role, that backslashes in the files' literals mean what they say,
// and how long one attempt waits for a lock.
const migrateSettings = `SELECT
	pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true),
	pg_catalog.set_config('row_security', 'off', true),
	pg_catalog.set_config('standard_conforming_strings', 'on', true),
	pg_catalog.set_config('lock_timeout', $1, true),
	pg_catalog.pg_advisory_xact_lock($2)`

// canBeOwner says whether the rest of the migration can run as lease_owner:
// it exists, the migrating role may SET ROLE to it, and it owns the schema
// (prelude.sql made it so where the migrating role could).
const canBeOwner = `SELECT CASE WHEN to_regrole('lease_owner') IS NULL THEN false
	ELSE pg_has_role('lease_owner'::name, 'MEMBER'::text)
	 AND coalesce((SELECT nspowner FROM pg_namespace WHERE nspname = 'lease') = to_regrole('lease_owner'), false) END`

func migrateOnce(ctx context.Context, conn *pgx.Conn, opts MigrateOptions) (int, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", translate(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, migrateSettings, fmt.Sprintf("%dms", lockAttempt.Milliseconds()), int64(migrateLock)); err != nil {
		return 0, fmt.Errorf("migrate: %w", translate(err))
	}
	if err := refuseForeign(ctx, tx); err != nil {
		return 0, err
	}
	// The version is read once prelude.sql has made lease_owner the owner
	// where it could (a refusal below rolls prelude.sql back with the rest).
	m, have := migration{tx: tx}, -1
	files := leasesql.Files()
	for i := 0; i < len(files); i++ {
		f := files[i]
		if opts.watch != nil {
			opts.watch.startFile(f.Name)
		}
		if err := m.become(ctx, f.AsOwner); err != nil {
			return 0, err
		}
		if f.AsOwner && have < 0 {
			if have, err = migrationVersion(ctx, tx); err != nil {
				return 0, err
			}
			if have > currentVersion() {
				return 0, &SchemaError{Have: have, Want: currentVersion()}
			}
			files = append(files, leasesql.Upgrade(have)...)
		}
		if _, err := tx.Exec(ctx, f.SQL); err != nil {
			return 0, fmt.Errorf("migrate: %s: %w", f.Name, translate(err))
		}
	}
	if err := m.become(ctx, true); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO lease.schema_version (version) VALUES ($1)
		ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, applied_at = clock_timestamp()`,
		currentVersion()); err != nil {
		return 0, fmt.Errorf("migrate: record version: %w", translate(err))
	}
	if opts.NotifyRenewals != nil {
		if err := SetNotifyRenewals(ctx, tx, *opts.NotifyRenewals); err != nil {
			return 0, fmt.Errorf("migrate: notify renewals: %w", err)
		}
	}
	if err := refuseForeignMade(ctx, tx); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("migrate: %w", translate(err))
	}
	return have, nil
}

// migration switches a migration's transaction between the migrating role
// and lease_owner.
type migration struct {
	tx      pgx.Tx
	asOwner bool // whether it runs as lease_owner now
}

// become runs what follows as lease_owner (asOwner, where it can: see
// canBeOwner, asked again each time, since prelude.sql may have made it
// possible) or as the migrating role.
func (m *migration) become(ctx context.Context, asOwner bool) error {
	if asOwner == m.asOwner {
		return nil
	}
	if asOwner {
		var can bool
		if err := m.tx.QueryRow(ctx, canBeOwner).Scan(&can); err != nil {
			return fmt.Errorf("migrate: %w", translate(err))
		}
		if !can {
			return nil
		}
	}
	stmt := "SET LOCAL ROLE NONE"
	if asOwner {
		stmt = "SET LOCAL ROLE lease_owner"
	}
	if _, err := m.tx.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("migrate: %s: %w", stmt, translate(err))
	}
	m.asOwner = asOwner
	return nil
}

// migrationVersion is SchemaVersion read safely, also as the migrating role
// (before lease_owner owns the schema): only from a plain table (a view could
// run its owner's code), with row security off (a policy would run its code
// as the reader).
func migrationVersion(ctx context.Context, tx pgx.Tx) (int, error) {
	var kind *string
	if err := tx.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = to_regclass('lease.schema_version')`).Scan(&kind); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("migrate: %w", translate(err))
	}
	if kind != nil && *kind != "r" {
		return 0, fmt.Errorf("migrate: lease.schema_version is not a table (relkind %q): the schema was changed by hand; restore it from a backup", *kind)
	}
	return SchemaVersion(ctx, tx)
}
