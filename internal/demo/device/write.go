package device

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

const insertOutput = `
	INSERT INTO leasetop_demo.output (account_id, session_id, run_id, fence, device, chunk, accepted)
	VALUES ($1, $2, $3, $4, $5, $6, $7)`

// errRefused rolls back a write whose fence check failed.
var errRefused = errors.New("refused by the fence check")

// WriteChunk is the protected write: in one transaction, the fence check
// (which locks the lease row FOR SHARE, so no takeover can commit before this
// transaction ends), then the insert. A write the check refuses is recorded
// with accepted = false in a transaction of its own. It reports whether the
// write was accepted.
func WriteChunk(ctx context.Context, store *data.Store, tok lease.Token, device string, chunk int) (bool, error) {
	args := func(accepted bool) []any {
		// The public run id, as the events name the run: the secret is for the fence check only.
		return []any{tok.Key.Account, tok.Key.Session, tok.PublicRunID(), tok.Fence, device, chunk, accepted}
	}
	err := pgx.BeginFunc(ctx, store.Pinned(), func(tx pgx.Tx) error {
		if err := tok.Check(ctx, tx); err != nil {
			if errors.Is(err, lease.ErrStale) {
				return errRefused
			}
			return err
		}
		_, err := tx.Exec(ctx, insertOutput, args(true)...)
		return err
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errRefused):
		if _, err := store.Pinned().Exec(ctx, insertOutput, args(false)...); err != nil {
			return false, fmt.Errorf("record a refused write: %w", err)
		}
		return false, nil
	default:
		return false, fmt.Errorf("write output: %w", err)
	}
}
