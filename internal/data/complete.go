package data

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// accountSteps bounds the index probes AccountIDs makes: one per distinct
// account from the prefix on, so a fleet of a million accounts costs the
// completion milliseconds, not a scan.
const accountSteps = 10_000

// AccountIDs returns up to limit distinct account ids that begin with
// prefix, in the table's order, among the lease rows (lease.session_lease):
// what shell completion offers. It walks the primary key from account to
// account (a loose index scan) instead of reading every lease, and needs
// only lease_reader's SELECT.
func AccountIDs(ctx context.Context, q Querier, prefix string, limit int) ([]string, error) {
	rows, err := q.Query(ctx, `WITH RECURSIVE a(id, step) AS (
		(SELECT account_id, 1 FROM lease.session_lease WHERE account_id >= $1 ORDER BY account_id LIMIT 1)
		UNION ALL
		SELECT (SELECT l.account_id FROM lease.session_lease l WHERE l.account_id > a.id ORDER BY l.account_id LIMIT 1), a.step + 1
		  FROM a WHERE a.id IS NOT NULL AND a.step < $3)
		SELECT id FROM a WHERE id IS NOT NULL AND starts_with(id, $1) LIMIT $2`, prefix, limit, accountSteps)
	return collectIDs(rows, err, "account ids")
}

// SessionIDs returns up to limit distinct session ids that begin with
// prefix among the lease rows, of account when it is not empty (through the
// primary key), else of every account (a scan of the table, which a caller
// bounds with a statement timeout).
func SessionIDs(ctx context.Context, q Querier, account, prefix string, limit int) ([]string, error) {
	if account != "" {
		rows, err := q.Query(ctx, `SELECT session_id FROM lease.session_lease
			WHERE account_id = $1 AND session_id >= $2 AND starts_with(session_id, $2)
			ORDER BY session_id LIMIT $3`, account, prefix, limit)
		return collectIDs(rows, err, "session ids")
	}
	rows, err := q.Query(ctx, `SELECT DISTINCT session_id FROM lease.session_lease
		WHERE starts_with(session_id, $1) ORDER BY session_id LIMIT $2`, prefix, limit)
	return collectIDs(rows, err, "session ids")
}

func collectIDs(rows pgx.Rows, err error, what string) ([]string, error) {
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, translate(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, translate(err))
	}
	return ids, nil
}
