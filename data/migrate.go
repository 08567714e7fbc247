package data

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	leasesql "github.com/leasetop/leasetop/sql"
)

func currentVersion() int { return leasesql.Version }

// Owner returns the role that owns the lease functions, as whom the
// SECURITY DEFINER ones run: lease_owner when migrate could create it, else
// the role that migrated.
func Owner(ctx context.Context, q Querier) (string, error) {
	var owner string
	err := q.QueryRow(ctx, `SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'lease.acquire(text, text, uuid, interval, text)'::regprocedure`).Scan(&owner)
	if err != nil {
		return "", fmt.Errorf("read the lease functions' owner: %w", translate(err))
	}
	return owner, nil
}

// migrateLock is the advisory lock key that serialises concurrent migrations.
const migrateLock = 0x6c65617365746f70 // "leasetop"

// Migrate creates or upgrades the lease schema in one transaction and records
// its version. It is idempotent, and safe to run from several processes at
// once. It refuses to touch a schema newer than this leasetop. Coming from an
// older version it also runs that version's one-time steps (sql.Upgrade), in
// the same transaction.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	have, err := SchemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if have > currentVersion() {
		return &SchemaError{Have: have, Want: currentVersion()}
	}
	for _, f := range append(leasesql.Files(), leasesql.Upgrade(have)...) {
		if _, err := tx.Exec(ctx, f.SQL); err != nil {
			return fmt.Errorf("migrate: %s: %w", f.Name, translate(err))
		}
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO lease.schema_version (version) VALUES ($1)
		ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, applied_at = clock_timestamp()`,
		currentVersion()); err != nil {
		return fmt.Errorf("migrate: record version: %w", translate(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	return nil
}
