package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// cmdRelease force-releases a session's lease: with --run only if that run
// still holds it (compare-and-release, whatever the value: only the absence
// of --run releases whoever holds it). Exit 0 released, 5 nothing to
// release, 1 error, 2 usage.
func cmdRelease(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "release", "release --account A --session S [--run RUN] --reason TEXT [--dsn URL]")
	dsn := dsnFlag(fs)
	account := fs.String("account", "", "account id of the session (required)")
	session := fs.String("session", "", "session id (required)")
	runFlag := fs.String("run", "", "release only if this run still holds the lease: its run id, or its first 8 or more hex digits as the monitor shows them (then compared with the holder's full id). Without --run: whoever holds it")
	reason := fs.String("reason", "", "why, recorded in the force_released event with your login role (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("release takes no arguments, got %q", fs.Arg(0))
	case *account == "" || *session == "":
		return usageErrorf("release needs --account and --session")
	case *reason == "":
		return usageErrorf("release needs --reason: it is recorded with the event")
	}
	key := data.Key{Account: *account, Session: *session}
	if err := data.ValidateKey(key); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if err := data.ValidateReason(*reason); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	var run runArg // zero: no --run, whoever holds the lease
	if flagGiven(fs.FlagSet, "run") {
		var err error
		if run, err = parseRunArg(*runFlag); err != nil {
			return err
		}
	}
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	name := termtext.Clean(key.String(), 0)
	var ok bool
	if run.given {
		id, err := run.resolve(ctx, store, key, name)
		if err != nil {
			return err
		}
		if ok, err = store.ForceRelease(ctx, key, id, *reason); err != nil {
			return connError(err)
		}
		if ok {
			fmt.Fprintf(env.Stdout, "released %s (run %s)\n", name, id)
			return nil
		}
		return &ExitError{Code: ExitNothing, Err: nothingReleased(ctx, store, key, name, &id)}
	}
	if ok, err = store.ForceReleaseAny(ctx, key, *reason); err != nil {
		return connError(err)
	}
	if ok {
		fmt.Fprintf(env.Stdout, "released %s\n", name)
		return nil
	}
	return &ExitError{Code: ExitNothing, Err: nothingReleased(ctx, store, key, name, nil)}
}

// flagGiven reports whether the flag name was set on the command line, even to
// the empty string: a value is never mistaken for its absence.
func flagGiven(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// nothingReleased says why: not held, or held by another run than run (nil:
// no --run).
func nothingReleased(ctx context.Context, store *data.Store, key data.Key, name string, run *uuid.UUID) error {
	l, _, held, err := store.Lease(ctx, key)
	switch {
	case err != nil || !held:
		return fmt.Errorf("nothing to release: %s is not held", name)
	case run != nil && l.RunID != *run:
		return fmt.Errorf("nothing to release: %s is held by run %s (holder %q), not run %s",
			name, l.RunID, termtext.Clean(l.Holder, 64), *run)
	default: // released and re-acquired between the two reads
		return fmt.Errorf("nothing to release: %s changed hands (now run %s)", name, l.RunID)
	}
}
