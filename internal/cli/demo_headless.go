package cli

import (
	"context"
	"errors"
	"fmt"

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
func runHeadless(ctx context.Context, env Env, db *demo.DB, cfg demo.Config) error {
	ctx, stopDemo := context.WithCancelCause(ctx)
	defer stopDemo(nil)
	d, err := demo.New(db.Store(), cfg, func(l demo.Line) {
		if _, err := fmt.Fprintln(env.Stdout, l.String()); err != nil {
			stopDemo(errOutputClosed) // nobody reads the stream any more
		}
	})
	if err != nil {
		return err
	}
	demo.WriteIntro(env.Stdout, db.Where(), d.Config())
	out, err := d.Run(ctx)
	if err != nil {
		return err
	}
	if errors.Is(context.Cause(ctx), errOutputClosed) {
		return exitSilently(ExitOutputClosed)
	}
	demo.WriteSummary(env.Stdout, out)
	return demoOutcome(out, interruption(ctx))
}
