package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// cmdQueue shows a session's queue, head first, or clears it (--clear, as
// lease_admin): the ticket of --run, or every ticket. A cleared waiter stops
// waiting (leasetop run exits 3). Its own command rather than a flag of
// release: release ends a lease, and the queue's words (ticket, queued,
// cleared) are what run --on-busy queue and ls already say. Exit 0 shown or
// cleared, 5 nothing to clear, 1 error, 2 usage.
func cmdQueue(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "queue", "queue --account A --session S [--json] | --clear [--run RUN] --reason TEXT [--dsn URL]")
	dsn := dsnFlag(fs)
	account := fs.String("account", "", "account id of the session (required)")
	session := fs.String("session", "", "session id (required)")
	asJSON := fs.Bool("json", false, "print the queue as one JSON object")
	clear := fs.Bool("clear", false, "clear the queue (role lease_admin): every live ticket, or only --run's; each cleared waiter stops waiting")
	runFlag := fs.String("run", "", "with --clear: only this waiter's ticket: its run id, or its first 8 or more hex digits as queue, events and the monitor show them")
	reason := fs.String("reason", "", "with --clear: why, recorded in each queue_left event with your login role (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("queue takes no arguments, got %q", fs.Arg(0))
	case *account == "" || *session == "":
		return usageErrorf("queue needs --account and --session")
	case !*clear && (flagGiven(fs.FlagSet, "run") || flagGiven(fs.FlagSet, "reason")):
		return usageErrorf("--run and --reason go with --clear")
	case *clear && *asJSON:
		return usageErrorf("--json lists the queue; it does not go with --clear")
	case *clear && *reason == "":
		return usageErrorf("queue --clear needs --reason: it is recorded with each ticket's event")
	}
	key := data.Key{Account: *account, Session: *session}
	if err := data.ValidateKey(key); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if err := data.ValidateReason(*reason); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	var run runArg // zero: no --run, every ticket
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
	if !*clear {
		return listQueue(ctx, env, store, key, *asJSON)
	}
	return clearQueue(ctx, env, store, key, run, *reason)
}

// clearQueue clears run's ticket (zero runArg: every ticket) from key's
// queue and says how many it cleared.
func clearQueue(ctx context.Context, env Env, store *data.Store, key data.Key, run runArg, reason string) error {
	name := termtext.Clean(key.String(), 0)
	if !run.given {
		n, err := store.ClearQueue(ctx, key, reason)
		switch {
		case err != nil:
			return connError(err)
		case n == 0:
			return &ExitError{Code: ExitNothing, Err: fmt.Errorf("nothing to clear: the queue of %s has no live ticket", name)}
		}
		fmt.Fprintf(env.Stdout, "cleared %d %s from the queue of %s\n", n, plural(n, "ticket", "tickets"), name)
		return nil
	}
	id, err := resolveTicket(ctx, store, key, name, run)
	if err != nil {
		return err
	}
	ok, err := store.ClearTicket(ctx, key, id, reason)
	switch {
	case err != nil:
		return connError(err)
	case !ok:
		return &ExitError{Code: ExitNothing, Err: fmt.Errorf("nothing to clear: the queue of %s has no live ticket of run %s", name, id)}
	}
	fmt.Fprintf(env.Stdout, "cleared the ticket of run %s from the queue of %s\n", id, name)
	return nil
}

// resolveTicket returns the public run id whose ticket --run names: the one
// given, or the only live ticket's whose id starts with the prefix.
func resolveTicket(ctx context.Context, store *data.Store, key data.Key, name string, run runArg) (uuid.UUID, error) {
	if run.prefix == "" {
		return run.full, nil
	}
	q, err := store.QueueOf(ctx, key)
	if err != nil {
		return uuid.Nil, connError(err)
	}
	var found []uuid.UUID
	for _, t := range q {
		if strings.HasPrefix(t.RunID.String(), run.prefix) {
			found = append(found, t.RunID)
		}
	}
	switch len(found) {
	case 0:
		return uuid.Nil, &ExitError{Code: ExitNothing, Err: fmt.Errorf("nothing to clear: no live ticket in the queue of %s is run %s", name, run)}
	case 1:
		return found[0], nil
	}
	return uuid.Nil, usageErrorf("--run %s is ambiguous: runs %s and %s in the queue of %s both start with it; give more digits",
		run, found[0], found[1], name)
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
