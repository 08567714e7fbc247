package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/pgserver"
)

// cmdBench measures the lease protocol against baselines in the same run
// (docs/BENCHMARKS.md). Without --dsn or DATABASE_URL it starts a throwaway
// PostgreSQL with fsync on, as in production.
func cmdBench(ctx context.Context, env Env, args []string) error {
	cfg, asJSON, err := parseBenchFlags(env, args)
	if err != nil {
		return err
	}
	stop, err := benchServer(ctx, env, &cfg)
	if err != nil {
		return err
	}
	defer stop()
	cfg.Progress = func(name string) {
		fmt.Fprintf(env.Stderr, "bench: %s\n", name)
	}
	fmt.Fprintf(env.Stderr, "bench: %s, about %v\n", cfg.Server, bench.Estimate(cfg).Round(time.Second))
	rep, err := bench.Run(ctx, cfg)
	if rep != nil && len(rep.Results) > 0 {
		if perr := printReport(env, rep, asJSON); perr != nil {
			return perr
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

// parseBenchFlags parses and checks leasetop bench's flags into the
// benchmark's configuration (without its database), and --json.
func parseBenchFlags(env Env, args []string) (cfg bench.Config, asJSON bool, err error) {
	fs := newFlags(env, "bench",
		"bench [--dsn URL [--pooler-dsn URL]] [--clients 16] [--keys 1000] [--duration 5s] [--warmup 1s] [--json] [--only NAME,...] [--monitor-leases 100000]")
	dsn := fs.String("dsn", "", "PostgreSQL URL of a database with the lease schema (default $DATABASE_URL, else a throwaway server with fsync on)")
	poolerDSN := fs.String("pooler-dsn", "", "the same database through a transaction pooler, for --only pooler (default with the throwaway server: a PgBouncer bench starts)")
	clients := fs.Int("clients", 16, "concurrent clients, each with its own connection")
	keys := fs.Int("keys", 1000, "lease keys, split between the clients")
	duration := fs.Duration("duration", 5*time.Second, "how long each workload is measured")
	warmup := fs.Duration("warmup", time.Second, "how long each workload runs before it is measured")
	monitorLeases := fs.Int("monitor-leases", 100_000, "live leases the monitor, exporter and poll-cost workloads write (--only monitor,exporter,poll-cost); history-month's events a day")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	only := fs.String("only", "", "comma-separated workloads or groups to run (default all but the opt-in monitor, exporter, pooler and poll-cost): "+strings.Join(bench.Names(), ", "))
	if err := parseFlags(fs, args); err != nil {
		return cfg, false, err
	}
	if fs.NArg() > 0 {
		return cfg, false, usageErrorf("bench takes no arguments, got %q", fs.Arg(0))
	}
	// Zero means "default" in bench.Config; on the command line it is a mistake.
	switch {
	case *clients < 1:
		return cfg, false, usageErrorf("--clients must be at least 1, got %d", *clients)
	case *keys < 1:
		return cfg, false, usageErrorf("--keys must be at least 1, got %d", *keys)
	case *duration <= 0:
		return cfg, false, usageErrorf("--duration must be positive, got %v", *duration)
	case *monitorLeases < 1:
		return cfg, false, usageErrorf("--monitor-leases must be at least 1, got %d", *monitorLeases)
	}
	cfg = bench.Config{Clients: *clients, Keys: *keys, Duration: *duration, Warmup: *warmup, MonitorLeases: *monitorLeases, PoolerDSN: *poolerDSN}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, usageErrorf("%v", err)
	}
	cfg.DSN = resolveDSN(env, *dsn)
	return cfg, *jsonOut, nil
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
