package data

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// forceReleaseCall calls lease.force_release with run, the public run id to
// compare (SQL NULL: whoever holds the lease), and reports whether it
// deleted the lease. It sends the force_released notification after the
// commit, as Acquire and Release send theirs (sqlcall.ForceReleaseQuiet): a
// full NOTIFY queue, which any role that may connect can cause, then fails
// only the notification, never the operator's release.
func (s *Store) forceReleaseCall(ctx context.Context, key Key, run any, reason string) (bool, error) {
	var ok bool
	err := s.callNotify(ctx, sqlcall.ForceReleaseQuiet,
		[]any{key.Account, key.Session, run, reason}, []any{key.Account, key.Session, run},
		func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&ok); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	return ok, err
}
