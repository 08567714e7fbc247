package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// The environment variables through which `leasetop run` hands its child the
// token (see TokenFromEnv and Token.Env).
const (
	EnvAccountID = "LEASETOP_ACCOUNT_ID"
	EnvSessionID = "LEASETOP_SESSION_ID"
	EnvRunID     = "LEASETOP_RUN_ID"
	EnvFence     = "LEASETOP_FENCE"
)

// Token names one ownership period of a lease: the key, the run and its
// fence. It is the "sequencer" a protected resource checks before it accepts
// a write.
//
// RunID is the run's own id, a secret: whoever has it can fence-check (and
// renew and release) this run's lease. Log PublicRunID instead; String and
// the errors of Check show only the public id.
type Token struct {
	Key   Key
	RunID uuid.UUID
	Fence int64
}

// PublicRunID returns the run's public id, as the lease table, the events and
// the monitor show it (data.PublicRunID).
func (t Token) PublicRunID() uuid.UUID { return data.PublicRunID(t.RunID) }

// String describes the token by its public run id, never the secret.
func (t Token) String() string {
	return fmt.Sprintf("%q run %s fence %d", t.Key.String(), t.PublicRunID(), t.Fence)
}

// Check is the fence check for a write to the lease's own database. Call it
// inside the transaction tx that makes the protected write, before the write:
// it returns nil and locks the lease row FOR SHARE, so no takeover can commit
// until tx ends, when t's run still holds an unexpired lease with t's fence.
// Otherwise it returns ErrStale (the run lost the lease; do not write) or
// the database's error.
//
//	tx, _ := pool.Begin(ctx)
//	defer tx.Rollback(ctx)
//	if err := token.Check(ctx, tx); err != nil {
//		return err // stale: someone else owns the session now
//	}
//	tx.Exec(ctx, "INSERT ...")
//	tx.Commit(ctx)
func (t Token) Check(ctx context.Context, tx pgx.Tx) error {
	err := data.CheckFence(ctx, tx, t.Key, t.RunID, t.Fence)
	if errors.Is(err, data.ErrNotHeld) {
		return fmt.Errorf("%w: run %s fence %d no longer holds %q", ErrStale, t.PublicRunID(), t.Fence, t.Key.String())
	}
	return err
}

// Env returns the token as environment variables (NAME=value).
// LEASETOP_RUN_ID is the run's secret id: the child needs it for
// lease.check_fence, and must not print it.
func (t Token) Env() []string {
	return []string{
		EnvAccountID + "=" + t.Key.Account,
		EnvSessionID + "=" + t.Key.Session,
		EnvRunID + "=" + t.RunID.String(),
		EnvFence + "=" + strconv.FormatInt(t.Fence, 10),
	}
}

// TokenFromEnv reads the token `leasetop run` gives its child. Pass
// os.Getenv.
func TokenFromEnv(getenv func(string) string) (Token, error) {
	t := Token{Key: Key{Account: getenv(EnvAccountID), Session: getenv(EnvSessionID)}}
	if err := data.ValidateKey(t.Key); err != nil {
		return Token{}, fmt.Errorf("%s/%s: %w", EnvAccountID, EnvSessionID, err)
	}
	run, err := uuid.Parse(getenv(EnvRunID))
	if err != nil || run == uuid.Nil {
		return Token{}, fmt.Errorf("%w: %s must be a run id (UUID)", data.ErrInvalid, EnvRunID)
	}
	fence, err := strconv.ParseInt(getenv(EnvFence), 10, 64)
	if err != nil || fence <= 0 {
		return Token{}, fmt.Errorf("%w: %s must be a positive integer", data.ErrInvalid, EnvFence)
	}
	t.RunID, t.Fence = run, fence
	return t, nil
}
