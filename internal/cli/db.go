package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/data"
)

// dsnFlag registers --dsn on fs.
func dsnFlag(fs *flag.FlagSet) *string {
	return fs.String("dsn", "", "PostgreSQL URL or keyword/value string (default $DATABASE_URL, else the libpq PG* variables)")
}

// resolveDSN picks --dsn, else DATABASE_URL, else "" (pgx then reads PG*).
func resolveDSN(env Env, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return env.Getenv("DATABASE_URL")
}

// openStore connects and checks the schema, with one-line errors that never
// contain a password.
func openStore(ctx context.Context, dsn string) (*data.Store, error) {
	s, err := data.Open(ctx, dsn)
	if err != nil {
		return nil, connError(err)
	}
	return s, nil
}

// connError turns a connection failure into one line: where, and what went
// wrong, without the connection string.
func connError(err error) error {
	if errors.Is(err, data.ErrSchema) || errors.Is(err, data.ErrInvalid) {
		return err
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		where := ce.Config.Host
		if ce.Config.Port != 0 {
			where = fmt.Sprintf("%s:%d", where, ce.Config.Port)
		}
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("cannot connect to %s/%s as %s: %s",
			where, ce.Config.Database, ce.Config.User, rootCause(ce.Unwrap()))}
	}
	if strings.HasPrefix(err.Error(), "invalid database URL") {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w (check --dsn or DATABASE_URL)", err)}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("permission denied: %s (see the roles in the README)", pgErr.Message)}
	}
	return err
}

// rootCause returns the innermost error message.
func rootCause(err error) string {
	if err == nil {
		return "unknown error"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return err.Error()
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(env Env, name, usageLine string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: leasetop %s\n\nFlags:\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, mapping flag errors to ExitUsage (help to ExitOK).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &ExitError{Code: ExitUsage, Err: &silentError{code: ExitUsage}}
	}
	return nil
}
