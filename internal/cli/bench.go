package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/termtext"
)

// cmdBench measures the lease protocol against baselines in the same run
// (docs/BENCHMARKS.md). Without --dsn or DATABASE_URL it starts a throwaway
// PostgreSQL with fsync on, as in production.
func cmdBench(ctx context.Context, env Env, args []string) error {
	opts, err := parseBenchFlags(env, args)
	if err != nil {
		return err
	}
	cfg := opts.cfg
	stop, err := benchServer(ctx, env, &cfg)
	if err != nil {
		return err
	}
	defer stop()
	// The header waits for the first workload: a database at another
	// schema version gets its one line first, and nothing else.
	header := sync.OnceFunc(func() {
		fmt.Fprintf(env.Stderr, "bench: %s, about %v\n", cfg.Server, bench.Estimate(cfg).Round(time.Second))
	})
	cfg.Progress = func(name string) {
		header()
		fmt.Fprintf(env.Stderr, "bench: %s\n", name)
	}
	cfg.Meter = newMeter(env, "bench: ")
	rep, err := bench.Run(ctx, cfg)
	if rep != nil && len(rep.Results) > 0 {
		if perr := printReport(env, rep, opts.asJSON); perr != nil {
			return perr
		}
		if opts.plotDir != "" {
			if perr := writePlots(env, rep, opts.plotDir); perr != nil {
				return perr
			}
		}
	}
	if in := interruption(ctx); in != nil { // Run ended ctx on SIGINT, SIGTERM or SIGHUP
		if err != nil && err.Error() != context.Canceled.Error() { // the clean-up failed too
			return fmt.Errorf("%w: %s", in, err.Error())
		}
		return fmt.Errorf("%w; bench removed what it had created", in)
	}
	if err != nil {
		return connError(err)
	}
	if rep == nil || rep.Failed() {
		return &ExitError{Code: ExitFailure, Err: errors.New("some workloads failed: see FAILED above")}
	}
	return nil
}

// benchOptions is leasetop bench's command line: the benchmark's
// configuration (without its database when none was named), --json and
// --plot.
type benchOptions struct {
	cfg     bench.Config
	asJSON  bool
	plotDir string
}

// parseBenchFlags parses and checks leasetop bench's flags; a --plot
// folder is made and checked writable before anything runs.
func parseBenchFlags(env Env, args []string) (benchOptions, error) {
	fs := newFlags(env, "bench",
		"bench [--dsn URL [--pooler-dsn URL]] [--clients 16] [--keys 1000] [--duration 5s] [--warmup 1s] [--json] [--only NAME,...] [--monitor-leases 100000] [--plot DIR]")
	dsn := fs.String("dsn", "", "PostgreSQL URL of a database with the lease schema (default $DATABASE_URL, else a throwaway server with fsync on)")
	poolerDSN := fs.String("pooler-dsn", "", "the same database through a transaction pooler, for --only pooler (default with the throwaway server: a PgBouncer bench starts)")
	clients := fs.Int("clients", 16, "concurrent clients, each with its own connection")
	keys := fs.Int("keys", 1000, "lease keys, split between the clients")
	duration := fs.Duration("duration", 5*time.Second, "how long each workload is measured")
	warmup := fs.Duration("warmup", time.Second, "how long each workload runs before it is measured")
	monitorLeases := fs.Int("monitor-leases", 100_000, "live leases the monitor, exporter and poll-cost workloads write (--only monitor,exporter,poll-cost); history-month's events a day")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	plotDir := fs.String("plot", "", "also write SVG plots of the results into this folder (made if missing): "+strings.Join(bench.FigureNames(), ", "))
	only := fs.String("only", "", "comma-separated workloads or groups to run (default all but the opt-in monitor, exporter, pooler and poll-cost): "+strings.Join(bench.Names(), ", "))
	var opts benchOptions
	if err := parseFlags(fs, args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, usageErrorf("bench takes no arguments, got %q", fs.Arg(0))
	}
	// Zero means "default" in bench.Config; on the command line it is a mistake.
	switch {
	case *clients < 1:
		return opts, usageErrorf("--clients must be at least 1, got %d", *clients)
	case *keys < 1:
		return opts, usageErrorf("--keys must be at least 1, got %d", *keys)
	case *duration <= 0:
		return opts, usageErrorf("--duration must be positive, got %v", *duration)
	case *monitorLeases < 1:
		return opts, usageErrorf("--monitor-leases must be at least 1, got %d", *monitorLeases)
	}
	opts.cfg = bench.Config{Clients: *clients, Keys: *keys, Duration: *duration, Warmup: *warmup, MonitorLeases: *monitorLeases, PoolerDSN: *poolerDSN}
	if *only != "" {
		opts.cfg.Only = strings.Split(*only, ",")
	}
	if err := opts.cfg.Validate(); err != nil {
		return opts, usageErrorf("%v", err)
	}
	if *plotDir != "" {
		if err := checkPlotDir(*plotDir); err != nil {
			return opts, err
		}
	}
	opts.cfg.DSN = resolveDSN(env, *dsn)
	opts.asJSON, opts.plotDir = *asJSON, *plotDir
	return opts, nil
}

// benchServer names cfg's database, or, when it has none, starts the
// throwaway server (and PgBouncer, for the pooler workload) and points cfg
// at it; stop stops what it started.
func benchServer(ctx context.Context, env Env, cfg *bench.Config) (stop func(), err error) {
	if cfg.DSN != "" {
		connCfg, err := data.ParseConnConfig(cfg.DSN)
		if err != nil {
			return nil, connError(err)
		}
		cfg.Server = net.JoinHostPort(connCfg.Host, strconv.Itoa(int(connCfg.Port))) + "/" + connCfg.Database
		return func() {}, nil
	}
	srv, err := startBenchServer(ctx, env)
	if err != nil {
		return nil, err
	}
	cfg.DSN, cfg.Server, cfg.DataDir = srv.URL(benchDB), "embedded throwaway server", srv.Dir()
	if !cfg.Selects("pooler") || cfg.PoolerDSN != "" {
		return srv.Close, nil
	}
	b, err := srv.StartBouncer(ctx, pgserver.BouncerOptions{PoolSize: cfg.Clients + 4})
	if err != nil {
		srv.Close()
		return nil, &ExitError{Code: ExitFailure, Err: fmt.Errorf("start PgBouncer for the pooler workload: %w", err)}
	}
	cfg.PoolerDSN = b.URL(benchDB)
	return func() { b.Close(); srv.Close() }, nil
}

func printReport(env Env, rep *bench.Report, asJSON bool) error {
	if asJSON {
		return rep.WriteJSON(env.Stdout)
	}
	return rep.WriteText(env.Stdout)
}

// benchDB is the database bench creates on its throwaway server.
const benchDB = "leasetop_bench"

// startBenchServer starts a throwaway PostgreSQL with fsync on and a migrated
// database.
func startBenchServer(ctx context.Context, env Env) (*pgserver.Server, error) {
	fmt.Fprintln(env.Stderr, "bench: starting a throwaway PostgreSQL (fsync on, as in production)")
	srv, err := pgserver.Start(ctx, pgserver.Options{Fsync: true})
	if err != nil {
		return nil, &ExitError{Code: ExitFailure, Err: fmt.Errorf("start PostgreSQL: %w", err)}
	}
	if _, err := pgserver.CreateMigrated(ctx, srv.URL("postgres"), benchDB); err != nil {
		srv.Close()
		return nil, &ExitError{Code: ExitFailure, Err: fmt.Errorf("throwaway server: %w", err)}
	}
	return srv, nil
}

// checkPlotDir makes --plot's folder and checks, before the run, that the
// plots can be written there.
func checkPlotDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usageErrorf("--plot: %v", err)
	}
	f, err := os.CreateTemp(dir, ".leasetop-plot-check-*")
	if err != nil {
		return usageErrorf("--plot: %v", err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// writePlots writes the report's plots into dir and says on stderr which
// it wrote and what to run for the others.
func writePlots(env Env, rep *bench.Report, dir string) error {
	written, missing, err := bench.WritePlots(rep, dir)
	for _, path := range written {
		fmt.Fprintf(env.Stderr, "bench: wrote %s\n", termtext.Clean(path, 0))
	}
	for _, m := range missing {
		fmt.Fprintf(env.Stderr, "bench: no %s\n", m)
	}
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	return nil
}
