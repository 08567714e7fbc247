package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/exporter"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/monitor"
)

// Limits of the exporter's flags.
const (
	maxExpiringWithin = 24 * time.Hour // the longest TTL lease.acquire accepts
	maxAccountsLimit  = 1000
)

// cmdExporter serves the monitor's picture of the database to Prometheus
// until it is stopped. SIGINT and SIGTERM are a daemon's normal stop (exit
// 0, also while it starts); SIGHUP, a closed terminal, interrupts it as it
// does every command (129).
func cmdExporter(ctx context.Context, env Env, args []string) error {
	ctx, stop := withInterrupts(ctx)
	defer stop()
	err := exporterMain(ctx, env, args)
	if in := interruption(ctx); in != nil {
		if in.Signal == syscall.SIGHUP {
			return in
		}
		return nil
	}
	return err
}

// exporterMain is cmdExporter until a signal ends ctx.
func exporterMain(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "exporter",
		"exporter [--listen 127.0.0.1:9187] [--dsn URL | --context NAME...] [--listen-dsn URL] [--poll 250ms] [--expiring-within 5s] [--by-account [--max-accounts 50]] [--max-limits 20] [--config PATH]")
	dsn := dsnFlag(fs)
	follow := addListenFlags(fs)
	contexts := addContextFlags(fs, nil)
	listen := fs.String("listen", "127.0.0.1:9187", "host:port to serve /metrics, /healthz and /readyz on (port 0: any free port)")
	within := fs.Duration("expiring-within", exporter.DefaultExpiringWithin, "an unexpired lease with less than this left counts in leasetop_leases_expiring")
	byAccount := fs.Bool("by-account", false, `label the lease gauges with the account: the --max-accounts accounts with the most leases, the rest as account="other"`)
	maxAccounts := fs.Int("max-accounts", exporter.DefaultMaxAccounts, "with --by-account: how many accounts get series of their own")
	maxLimits := fs.Int("max-limits", exporter.DefaultMaxLimits, `how many limits (an account's, or a pool's within it) get leasetop_limit_* series of their own, the fullest first; the rest are summed as account="other"`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("exporter takes no arguments, got %q", fs.Arg(0))
	}
	maxSet := false
	fs.Visit(func(f *flag.Flag) { maxSet = maxSet || f.Name == "max-accounts" })
	switch {
	case *within <= 0 || *within > maxExpiringWithin:
		return usageErrorf("exporter: --expiring-within must be more than 0 and at most %v, got %v", maxExpiringWithin, *within)
	case *maxAccounts < 1 || *maxAccounts > maxAccountsLimit:
		return usageErrorf("exporter: --max-accounts must be between 1 and %d, got %d", maxAccountsLimit, *maxAccounts)
	case *maxLimits < 1 || *maxLimits > maxAccountsLimit:
		return usageErrorf("exporter: --max-limits must be between 1 and %d, got %d", maxAccountsLimit, *maxLimits)
	case maxSet && !*byAccount:
		return usageErrorf("exporter: --max-accounts needs --by-account")
	}
	cs, err := contexts.resolve(env)
	if err != nil {
		return err
	}
	opt, err := follow.options(env)
	if err != nil {
		return err
	}
	opt.OnPoll = printPoll(env.Stderr)
	if err := checkListenAddr(*listen); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return listenError(*listen, err)
	}
	defer ln.Close()
	cfg := exporter.Config{
		ExpiringWithin: *within, ByAccount: *byAccount, MaxAccounts: *maxAccounts, MaxLimits: *maxLimits,
		OnLink: func(context string, h monitor.Health) { reportExporterLink(env, context, h) },
	}
	if cs != nil {
		// Each context opens when it can: a database down at start is
		// exported as down (leasetop_feed_state) and comes in by itself.
		ctxs := make([]monitor.Context, len(cs))
		for i, c := range cs {
			o := opt
			o.OnPoll = func(st data.ListenerState) {
				fmt.Fprintln(prefixed{env.Stderr, "context " + c.name + ": "}, pollLine(st))
			}
			ctxs[i] = monitor.Context{Name: c.name, Open: func(ctx context.Context) (*data.Store, error) { return openContext(ctx, c, o) }}
		}
		return serveExporter(ctx, env, exporter.NewContexts(ctxs, cfg), ln)
	}
	store, err := openStoreWith(ctx, resolveDSN(env, *dsn), opt)
	if err != nil {
		return err
	}
	defer store.Close()
	return serveExporter(ctx, env, exporter.New(store, cfg), ln)
}

// serveExporter serves exp's endpoints on ln and runs it until ctx ends.
func serveExporter(ctx context.Context, env Env, exp *exporter.Exporter, ln net.Listener) error {
	logger := log.New(env.Stderr, "leasetop: exporter: ", 0)
	srv, ln, conns := exporter.NewServer(ln, exp.Handler(logger), logger)
	fmt.Fprintf(env.Stderr, "leasetop: exporter serving http://%s/metrics (at most %d connections)\n", ln.Addr(), conns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		serveErr error // read after wg.Wait
	)
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
			cancel()
		}
	})
	_ = exp.Run(ctx)
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	wg.Wait()
	if serveErr != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("exporter: serve: %s", netCause(serveErr))}
	}
	return nil
}

// checkListenAddr refuses a --listen value that is not host:port.
func checkListenAddr(addr string) error {
	problem := ""
	_, port, err := net.SplitHostPort(addr)
	var ae *net.AddrError
	switch {
	case errors.As(err, &ae):
		problem = ae.Err
	case err != nil:
		problem = err.Error()
	default:
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			problem = "port must be a number from 0 to 65535"
		}
	}
	if problem != "" {
		return usageErrorf("exporter: --listen %q: %s (want host:port, e.g. 127.0.0.1:9187 or :9187)", addr, problem)
	}
	return nil
}

// listenError is the one line for an address the exporter cannot listen on.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		err = fmt.Errorf("exporter: cannot listen on %q: address already in use (another exporter? choose another --listen)", addr)
	} else {
		err = fmt.Errorf("exporter: cannot listen on %q: %s (check --listen)", addr, netCause(err))
	}
	return &ExitError{Code: ExitFailure, Err: err}
}

// reportExporterLink prints one line when a feed's link changes (of the
// context named context, in an exporter of several).
func reportExporterLink(env Env, context string, h monitor.Health) {
	head := "leasetop: exporter: "
	if context != "" {
		head += "context " + context + ": "
	}
	var msg string
	switch h.Link {
	case monitor.LinkLive:
		fmt.Fprintln(env.Stderr, head+"feed live")
		return
	case monitor.LinkReconnecting:
		msg = head + "connection lost, reconnecting"
	case monitor.LinkDown:
		msg = head + "feed down, still retrying"
	default:
		return
	}
	if h.Err != nil {
		msg += ": " + termtext.Clean(oneLine(h.Err.Error()), 200)
	}
	fmt.Fprintln(env.Stderr, msg)
}

// netCause is the reason of a network error without the operation and
// address around it: "address already in use", "no such host".
func netCause(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}
