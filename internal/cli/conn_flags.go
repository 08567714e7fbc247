package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// Poll intervals leasetop accepts from --poll.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = time.Minute
)

// listenFlags are the flags of a command that follows events (watch,
// events --follow, run --wait): where its LISTEN goes, or that it polls.
type listenFlags struct {
	dsn  *string
	poll *time.Duration
}

// addListenFlags registers --listen-dsn and --poll on fs.
func addListenFlags(fs *flagSet) *listenFlags {
	return &listenFlags{
		dsn: fs.String("listen-dsn", "", "a connection for notifications only (LISTEN), when --dsn goes through a transaction pooler "+
			"or to a standby: direct (or session-mode) to the primary (default $LEASETOP_LISTEN_DSN)"),
		poll: fs.Duration("poll", 0, "read lease.event every this long instead of listening, e.g. 250ms "+
			"(default: listen, and poll by itself where LISTEN cannot work: a standby, a pooler without --listen-dsn)"),
	}
}

// options returns the store options the flags ask for: --listen-dsn, else
// LEASETOP_LISTEN_DSN, and --poll. A bad value is a usage error.
func (f *listenFlags) options(env Env) (data.Options, error) {
	if p := *f.poll; p != 0 && (p < minPoll || p > maxPoll) {
		return data.Options{}, usageErrorf("--poll must be between %s and %s, got %s", minPoll, maxPoll, p)
	}
	if *f.dsn != "" {
		warnPassword(env, "--listen-dsn", *f.dsn)
	}
	dsn := cmp.Or(*f.dsn, env.Getenv("LEASETOP_LISTEN_DSN"))
	if dsn != "" {
		if _, err := data.ParseConnConfig(dsn); err != nil {
			return data.Options{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("listen DSN: %w (check --listen-dsn or LEASETOP_LISTEN_DSN)", err)}
		}
	}
	return data.Options{ListenDSN: dsn, Poll: *f.poll}, nil
}

// openStoreWith is openStore with options. The store's sessions get the
// pinned search_path at start-up where the server keeps it
// (data.Options.PinSearchPath): every statement resolves names in
// pg_catalog and lease anyway (data.Pinned), and there this costs no round
// trip. The commands may run as a privileged role on a database whose
// other roles set its search_path.
func openStoreWith(ctx context.Context, dsn string, opt data.Options) (*data.Store, error) {
	opt.PinSearchPath = true
	s, err := data.OpenWith(ctx, dsn, opt)
	if err != nil {
		return nil, connError(err)
	}
	return s, nil
}

// pollLine is the one line that says a follower polls, and why.
func pollLine(st data.ListenerState) string {
	why := termtext.Clean(oneLine(st.Reason.String()), 200)
	if st.Reason.Cause == data.PollNoDelivery || st.Reason.Cause == data.PollPooler {
		why += " (--listen-dsn or LEASETOP_LISTEN_DSN)"
	}
	return fmt.Sprintf("leasetop: polling lease.event every %s: %s", st.Poll, why)
}

// printPoll returns a data.Options.OnPoll hook that prints pollLine on w.
func printPoll(w io.Writer) func(data.ListenerState) {
	return func(st data.ListenerState) { fmt.Fprintln(w, pollLine(st)) }
}

// printNotifyError returns a data.Options.OnNotifyError hook that prints
// the error on w as one line: a transition committed whose notification
// was not sent (monitors see it when they catch up).
func printNotifyError(w io.Writer) func(error) {
	return func(err error) { fmt.Fprintln(w, "leasetop: "+termtext.Clean(oneLine(err.Error()), 400)) }
}

// poolerError is the one line for what a pooler refused: its message and
// what to change. A setting to change is bad input; a limit reached is the
// system's failure.
func poolerError(pe *data.PoolerError) error {
	code := ExitUsage
	if !data.Permanent(pe) {
		code = ExitFailure
	}
	return &ExitError{Code: code, Err: errors.New(termtext.Clean(oneLine(pe.Error()), 0))}
}
