package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/leasetop/leasetop/internal/data"
)

// dsnFlag registers --dsn on fs.
func dsnFlag(fs *flagSet) *string {
	return fs.String("dsn", "", "PostgreSQL URL or keyword/value string (default $DATABASE_URL, else the libpq PG* variables)")
}

// resolveDSN picks --dsn, else DATABASE_URL, else "" (pgx then reads PG*).
// A password in --dsn gets a warning.
func resolveDSN(env Env, flagValue string) string {
	if flagValue != "" {
		warnPassword(env, "--dsn", flagValue)
		return flagValue
	}
	return env.Getenv("DATABASE_URL")
}

// openStore connects and checks the schema, with one-line errors that never
// contain a password.
func openStore(ctx context.Context, dsn string) (*data.Store, error) {
	return openStoreWith(ctx, dsn, data.Options{})
}

// connError turns a connection failure into one line: where, and what went
// wrong, without the connection string.
func connError(err error) error {
	return connErrorHint(err, "--dsn, DATABASE_URL or the PG* variables", "--dsn or DATABASE_URL")
}

// connErrorHint is connError with what to check named: check for a
// database that cannot be reached, checkDSN for a DSN that does not parse
// (for a context, where it is defined).
func connErrorHint(err error, check, checkDSN string) error {
	if se, ok := asSchemaError(err); ok {
		return schemaError(se)
	}
	if errors.Is(err, data.ErrSchema) || errors.Is(err, data.ErrInvalid) {
		return err
	}
	var (
		ce     *data.ConnectError
		dsn    *data.DSNError
		perm   *data.PermissionError
		pooler *data.PoolerError
	)
	switch {
	case errors.As(err, &pooler):
		return poolerError(pooler)
	case errors.As(err, &ce):
		where := ce.Host
		if ce.Port != 0 {
			where = fmt.Sprintf("%s:%d", where, ce.Port)
		}
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("cannot connect to %s/%s as %s: %s (check %s)",
			where, ce.Database, ce.User, ce.Reason, check)}
	case errors.As(err, &dsn):
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w (check %s)", err, checkDSN)}
	case errors.As(err, &perm):
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("permission denied: %s (see the roles in the README)", perm.Message)}
	}
	return err
}

// flagSet is a command's flags: errors come back as one line instead of
// being printed with the whole usage, and -h prints the usage on stdout.
type flagSet struct {
	*flag.FlagSet
	env       Env
	usageLine string
}

// newFlags returns the flag set for command name; usageLine is the synopsis
// shown by -h.
func newFlags(env Env, name, usageLine string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, env: env, usageLine: usageLine}
}

// parseFlags parses args. A bad flag is an ExitUsage error of one line; -h
// prints the usage and returns flag.ErrHelp (exit 0).
func parseFlags(fs *flagSet, args []string) error {
	if fs.env.describe != nil {
		fs.env.describe(fs.FlagSet)
		return flag.ErrHelp
	}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(fs.env.Stdout, "Usage: leasetop %s\n\nFlags:\n", fs.usageLine)
		fs.SetOutput(fs.env.Stdout)
		fs.PrintDefaults()
		return err
	default:
		return usageErrorf("%s: %v (see leasetop %s -h)", fs.Name(), err, fs.Name())
	}
}
