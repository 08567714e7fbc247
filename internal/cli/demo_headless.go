package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/leasetop/leasetop/internal/demo"
)

// errOutputClosed stops a headless demo whose standard output was closed.
var errOutputClosed = errors.New("standard output closed")

// ExitOutputClosed is the demo's exit code when its standard output was
// closed (piped into head, say): 128 + SIGPIPE, as a shell reports a
// program that SIGPIPE killed. Everything the demo started was still
// stopped and removed.
const ExitOutputClosed = 141

// runHeadless runs the demo without the monitor: the event stream as lines,
// then the summary and the invariant check.
func runHeadless(ctx context.Context, env Env, db *demoDB, cfg demo.Config) error {
	ctx, stopDemo := context.WithCancelCause(ctx)
	defer stopDemo(nil)
	d, err := demo.New(db.store, cfg, func(l demo.Line) {
		if _, err := fmt.Fprintln(env.Stdout, l.String()); err != nil {
			stopDemo(errOutputClosed) // nobody reads the stream any more
		}
	})
	if err != nil {
		return err
	}
	cfg = d.Config()
	fmt.Fprintf(env.Stdout, "leasetop demo: %s\n", db.where)
	fmt.Fprintf(env.Stdout, "leasetop demo: %d device processes (%s, for each of %d accounts) on %d conversations, ttl %s, seed %d, for %s\n",
		len(cfg.Devices)*cfg.Accounts, strings.Join(cfg.Devices, ", "), cfg.Accounts, cfg.Accounts*cfg.Sessions, cfg.TTL, cfg.Seed, cfg.Duration)
	out, err := d.Run(ctx)
	if err != nil {
		return err
	}
	if errors.Is(context.Cause(ctx), errOutputClosed) {
		return exitSilently(ExitOutputClosed)
	}
	demo.WriteSummary(env.Stdout, out)
	switch {
	case !out.OK():
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("demo: %d invariant violations (listed above)", len(out.Violations))}
	case out.Interrupted:
		return &ExitError{Code: ExitCode(context.Canceled), Err: errors.New("demo interrupted; everything it started was stopped and removed")}
	}
	return nil
}
