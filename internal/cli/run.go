package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/supervise"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// minRunTTL is the shortest --ttl: below it a renewal round trip and the
// safety margin leave the command no time to run.
const minRunTTL = 500 * time.Millisecond

// runOptions are leasetop run's parsed flags.
type runOptions struct {
	dsn    string
	key    lease.Key
	ttl    time.Duration
	busy   busyOptions // --on-busy, --wait and what the run declares (run_busy.go)
	holder string
	grace  time.Duration
	argv   []string
	// passDBEnv passes DATABASE_URL, PGPASSWORD and PGSSLPASSWORD on to the
	// command (default: removed).
	passDBEnv bool
	store     data.Options // --listen-dsn, --poll: how --wait hears of a release
	ask       askOptions   // asking to hand over, and answering asks (run_ask.go)
	steer     steerOptions // steering the holder, and answering cancels (run_steer.go)
}

func cmdRun(ctx context.Context, env Env, args []string) error {
	opts, err := parseRunFlags(env, args)
	if err != nil {
		return err
	}
	if err := checkCommand(opts.argv[0]); err != nil {
		return err // before the database: a typo neither competes nor writes
	}
	// Signals are caught from the start (supervise.Forwarded). Until the
	// command runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT stop leasetop (exit
	// 128+N, nothing run), also while it connects; from then on the
	// supervisor forwards them all to the command's group.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, supervise.Forwarded...)
	defer signal.Stop(sigs)
	actx, stopWaiting := stopOnSignal(ctx, sigs, nil)
	defer stopWaiting()

	opts.store.OnPoll = printPoll(env.Stderr)
	opts.store.OnNotifyError = printNotifyError(env.Stderr)
	store, err := openStoreWith(actx, resolveDSN(env, opts.dsn), opts.store)
	if err != nil {
		return notRun(actx, err)
	}
	defer closeWithin(store, time.Second)
	client, err := lease.New(store, lease.Config{TTL: opts.ttl})
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	defer client.Close()
	l, err := acquireForRun(actx, env, store, client, opts)
	stopWaiting()
	if in := interruption(actx); in != nil {
		if l != nil { // acquired just as the signal arrived: give it back
			if err := l.Release(ctx); err != nil {
				warnf(env.Stderr, "%s", lineOf(err))
			}
		}
		return notRun(actx, in)
	}
	if err != nil {
		return err
	}
	return runHolding(ctx, env, l, opts, sigs)
}

// notRun is err, or, when a signal ended ctx before the command started,
// that interruption: exit 128+N, nothing was run.
func notRun(ctx context.Context, err error) error {
	if in := interruption(ctx); in != nil {
		return fmt.Errorf("%w before the lease was acquired; nothing was run", in)
	}
	return err
}

func parseRunFlags(env Env, args []string) (runOptions, error) {
	fs := newFlags(env, "run", "run --account A --session S [--ttl 15s] [--on-busy refuse|wait|queue|preempt|ask [--reason TEXT] [--ask-timeout 30s] [--then refuse|queue|preempt]] [--wait] [--listen-dsn URL] [--poll 250ms] "+
		"[--on-busy steer [--message TEXT] [--steer-wait acked|delivered]] [--on-cancel ignore|stop] "+
		"[--not-preemptible] [--attachment TEXT] [--pool P] [--priority N] [--on-ask decline|hand-over [--on-ask-signal SIGTERM]] [--holder LABEL] [--grace 5s] [--pass-db-env] [--dsn URL] -- CMD [ARGS...]")
	dsn := dsnFlag(fs)
	listen := addListenFlags(fs)
	account := fs.String("account", "", "account id of the session (required)")
	session := fs.String("session", "", "session id (required)")
	ttl := fs.Duration("ttl", 15*time.Second, "lease time to live on the database clock, renewed every ttl/3 (at least 500ms)")
	holder := fs.String("holder", "", `holder label operators see (default "CMD@HOST pid PID")`)
	grace := fs.Duration("grace", 5*time.Second, "after losing the lease, how long CMD has between SIGTERM and SIGKILL; "+
		"after preempting, how long CMD waits at most for the preempted run's command to stop")
	passDBEnv := fs.Bool("pass-db-env", false, "pass DATABASE_URL, LEASETOP_LISTEN_DSN, PGPASSWORD and PGSSLPASSWORD on to CMD "+
		"(default: removed, so CMD does not get leasetop's database credentials)")
	busy, ask, steer := addBusyFlags(fs), addAskFlags(fs), addSteerFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return runOptions{}, err
	}
	opts := runOptions{dsn: *dsn, key: lease.Key{Account: *account, Session: *session}, ttl: *ttl,
		holder: *holder, grace: *grace, argv: fs.Args(), passDBEnv: *passDBEnv}
	switch {
	case len(opts.argv) == 0:
		return opts, usageErrorf("run: no command given: leasetop run --account A --session S -- CMD [ARGS...]")
	case *account == "" || *session == "":
		return opts, usageErrorf("run: --account and --session are required")
	case opts.ttl < minRunTTL || opts.ttl > data.MaxTTL:
		return opts, usageErrorf("run: --ttl must be between %s and %s, got %s", minRunTTL, data.MaxTTL, opts.ttl)
	case opts.grace < 0:
		return opts, usageErrorf("run: --grace must not be negative, got %s", opts.grace)
	}
	if err := data.ValidateKey(opts.key); err != nil {
		return opts, usageErrorf("run: %v", err)
	}
	b, err := busy.options()
	if err != nil {
		return opts, err
	}
	opts.busy = b
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if opts.ask, err = ask.options(set, opts.busy); err != nil {
		return opts, err
	}
	if opts.steer, err = steer.options(set, opts.busy); err != nil {
		return opts, err
	}
	store, err := listen.options(env)
	if err != nil {
		return opts, err
	}
	opts.store = store
	if opts.holder == "" {
		opts.holder = defaultHolder(opts.argv[0])
	}
	if err := data.ValidateHolder(opts.holder); err != nil {
		return opts, usageErrorf("run: --holder: %v", err)
	}
	return opts, nil
}

// checkCommand is supervise.Check's refusal of a command that cannot
// start, as leasetop run's one line and the shell's exit code for it
// (127, 126), nothing written.
func checkCommand(name string) error {
	var se *supervise.StartError
	if err := supervise.Check(name); errors.As(err, &se) {
		return &ExitError{Code: se.Code, Err: fmt.Errorf("run: cannot start %s: %s; nothing was run",
			termtext.Quote(name), termtext.Clean(se.Reason, 0))}
	}
	return nil
}

// closeWithin closes the store but waits at most d for it. After a network
// failure pgx cancels the query in flight on a dead connection with a cancel
// request that can take 15 s to give up; leasetop run exits right after
// this, and the OS closes the sockets.
func closeWithin(store *data.Store, d time.Duration) {
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		store.Close()
	}()
	select {
	case <-closed:
	case <-time.After(d):
	}
}

// defaultHolder is "CMD@HOST pid PID", made a valid label (no control
// characters, at most data.MaxHolderBytes).
func defaultHolder(cmd string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	label := fmt.Sprintf("%s@%s pid %d", filepath.Base(cmd), host, os.Getpid())
	return termtext.Clean(label, data.MaxHolderBytes/4) // escapes controls; 4 bytes per cell at most
}

// commandLineAuthorizer is leasetop run's Authorizer. The command line has
// no user of its own: the caller authenticated to PostgreSQL with the role in
// the DSN, and that role's grants (lease_app: EXECUTE on acquire, renew and
// release) are the authorization, enforced by the database on every call.
// A program that serves users must authorize them itself (see package lease).
type commandLineAuthorizer struct{}

func (commandLineAuthorizer) Authorize(context.Context, lease.Request) error { return nil }

// warnf prints one line about the lease on stderr, made inert
// (termtext.Clean) as a whole.
func warnf(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, "leasetop: "+termtext.Clean(fmt.Sprintf(format, args...), 0))
}
