package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

//go:embed schema.sql
var schemaSQL string

// setupLock is the advisory lock that serialises concurrent demos creating
// the demo schema on one database.
const setupLock = 0x6c65617365646d6f // "leasedmo"

// Setup creates the demo's tables (output, device, attempt) if they do not
// exist. It reports whether it created the schema, so that Cleanup removes
// only what this demo made. Like every statement of the demo's, its own run
// pinned (data.Pinned): --dsn may name a database whose owner set its
// search_path.
func Setup(ctx context.Context, store *data.Store) (created bool, err error) {
	err = pgx.BeginFunc(ctx, store.Pinned(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(setupLock)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regnamespace('leasetop_demo') IS NOT NULL`).Scan(&exists); err != nil {
			return err
		}
		created = !exists
		_, err := tx.Exec(ctx, schemaSQL)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("create the demo's tables in schema leasetop_demo: %w", data.Translate(err))
	}
	return created, nil
}

// Cleanup deletes what a demo on a shared database left: its accounts' leases
// (through lease.force_release, so the history says so), their limits, and its rows (output,
// devices, attempts), and the demo schema when this demo created it and
// nothing else is in it.
// Events stay: they are history.
func Cleanup(ctx context.Context, store *data.Store, accounts []string, dropSchema bool) error {
	var errs []error
	_, err := store.ForceReleaseAccounts(ctx, accounts, "leasetop demo cleanup")
	errs = append(errs, err)
	for _, a := range accounts {
		if _, err := store.RemoveLimit(ctx, a, ""); err != nil && !errors.Is(err, data.ErrPermission) {
			errs = append(errs, err) // a login that may not set limits set none
		}
	}
	_, err = store.Pinned().Exec(ctx, `
		WITH output AS (DELETE FROM leasetop_demo.output WHERE account_id = ANY($1)),
		     device AS (DELETE FROM leasetop_demo.device WHERE account_id = ANY($1))
		DELETE FROM leasetop_demo.attempt WHERE account_id = ANY($1)`, accounts)
	errs = append(errs, err)
	if dropSchema {
		errs = append(errs, pgx.BeginFunc(ctx, store.Pinned(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(setupLock)); err != nil {
				return err
			}
			var left bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leasetop_demo.output) OR EXISTS (SELECT 1 FROM leasetop_demo.device)`).Scan(&left); err != nil || left {
				return err // another demo's rows: leave the schema
			}
			_, err := tx.Exec(ctx, `DROP TABLE leasetop_demo.output, leasetop_demo.device, leasetop_demo.attempt; DROP SCHEMA leasetop_demo`)
			return err
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up the demo's leases and rows: %w", err)
	}
	return nil
}
