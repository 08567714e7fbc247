package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/data"
)

// dsnFlag registers --dsn on fs.
func dsnFlag(fs *flagSet) *string {
	return fs.String("dsn", "", "PostgreSQL URL or keyword/value string (default $DATABASE_URL, else the libpq PG* variables)")
}

// resolveDSN picks --dsn, else DATABASE_URL, else "" (pgx then reads PG*).
// A password in --dsn gets a warning.
func resolveDSN(env Env, flagValue string) string {
	if flagValue != "" {
		warnPassword(env, flagValue)
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
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("cannot connect to %s/%s as %s: %s (check --dsn, DATABASE_URL or the PG* variables)",
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

// rootCause returns the innermost error message: the server's message, or
// the system's ("connection refused"). pgx joins the errors of each address
// and TLS fallback it tried; the first one stands for them all.
func rootCause(err error) string {
	for err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return pgErr.Message
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				err = errs[0]
				continue
			}
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				err = next
				continue
			}
		}
		return err.Error()
	}
	return "unknown error"
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
