package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// Exit codes, documented in docs/cli.md.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the database or the system failed (unreachable, refused, lost connection)
	ExitUsage   = 2 // bad flags or input: nothing was changed
	ExitBusy    = 3 // run: the lease is held by another run (without --wait)
	ExitLost    = 4 // run: the lease was lost while the command ran; the command was stopped
	ExitNothing = 5 // release: no lease matched, nothing was released
	ExitSchema  = 6 // the lease schema is missing or older (run leasetop migrate) or newer (upgrade leasetop)
	// ExitNotHandedOver: run (--on-ask hand-over) stopped its command for
	// an ask to hand over, and the ask expired or was withdrawn before the
	// command exited: nothing was handed over, the lease was released.
	ExitNotHandedOver = 7
	// ExitCancelled: run (--on-cancel stop) stopped its command for a
	// cancel message; the lease was released.
	ExitCancelled = 8
	// ExitMessageExpired: send --wait (or run --on-busy steer): the message
	// expired before it was delivered (or acknowledged).
	ExitMessageExpired = 9
)

// ExitError is an error with the process exit code it should produce.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Report prints err as one line on w ("leasetop: ...") and returns the exit
// code for it: ExitOK for nil. The line is made inert (termtext.Clean): an
// error may quote the server, a DSN or a name with escape sequences in it.
func Report(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	var silent *silentError
	if !errors.As(err, &silent) {
		fmt.Fprintln(w, "leasetop: "+termtext.Clean(oneLine(err.Error()), 0))
	}
	return code
}

// ExitCode maps an error to its documented exit code.
func ExitCode(err error) int {
	var (
		ee *ExitError
		in *Interrupted
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &in):
		return in.Code()
	case errors.Is(err, data.ErrSchema):
		return ExitSchema
	case errors.Is(err, data.ErrInvalid):
		return ExitUsage
	default:
		return ExitFailure
	}
}

// silentError carries an exit code for an outcome the command already
// printed (for example a child's own exit status).
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func exitSilently(code int) error {
	return &ExitError{Code: code, Err: &silentError{code: code}}
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
