package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/demo/device"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/keymap"
	"github.com/leasetop/leasetop/theme"
)

// demoFlags are the flags of `leasetop demo`.
type demoFlags struct {
	dsn      *string
	headless *bool
	duration *time.Duration
	seed     *int64
	accounts *int
	sessions *int
	devices  *string
	ttl      *time.Duration
	noChaos  *bool
	strategy *string
	theme    *string
}

func newDemoFlags(env Env) (*flagSet, *demoFlags) {
	fs := newFlags(env, "demo", "demo [--headless [--duration 30s]] [--seed N] [--dsn URL] [--accounts 2] [--sessions 4] [--devices desktop,browser,phone] [--ttl 4s] [--strategy MIX] [--no-chaos] [--theme NAME|PATH]")
	return fs, &demoFlags{
		dsn:      fs.String("dsn", "", "use this PostgreSQL (migrated) instead of starting a throwaway one; the demo removes only its own leases and rows"),
		headless: fs.Bool("headless", false, "no monitor: print the event stream, a summary and the invariant check (exit 1 if one fails)"),
		duration: fs.Duration("duration", 0, "stop after this long (default: 30s with --headless, until q in the monitor)"),
		seed:     fs.Int64("seed", 0, "seed for the chaos schedule and the devices' users (default: random, printed)"),
		accounts: fs.Int("accounts", demo.DefaultAccounts, "accounts (users), each with its own conversations and devices"),
		sessions: fs.Int("sessions", demo.DefaultSessions, "conversations per account"),
		devices:  fs.String("devices", strings.Join(demo.DefaultDevices(), ","), "the devices each user has open; one process per device and account"),
		ttl:      fs.Duration("ttl", demo.DefaultTTL, "the lease's time to live (1s to 1m)"),
		strategy: fs.String("strategy", "all", "what the devices' users do when a conversation is busy, chosen per press from this mix: "+
			device.DefaultMix().String()+" (any of them, comma-separated), classic (refuse,wait: before preempt and join) or all"),
		noChaos: fs.Bool("no-chaos", false, "no chaos schedule (the monitor's demo keys still work)"),
		theme:   themeFlag(fs),
	}
}

// cmdDemo runs the demo. SIGINT, SIGTERM and SIGHUP end it through its
// cleanup and the summary; it then exits 128+N, unless an invariant failed
// (exit 1: the failure outranks the interruption).
func cmdDemo(ctx context.Context, env Env, args []string) error {
	fs, f := newDemoFlags(env)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("demo takes no arguments, got %q", fs.Arg(0))
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	var (
		keys keymap.Map
		th   *theme.Theme
	)
	if !*f.headless {
		if !isTerminal(env.Stdin) || !isTerminal(env.Stdout) {
			return usageErrorf("the demo's monitor needs a terminal: for scripts use leasetop demo --headless")
		}
		if keys, err = loadKeys(env, ""); err != nil {
			return err
		}
		if th, err = loadTheme(env, *f.theme); err != nil {
			return err
		}
	}
	ctx, stop := withInterrupts(ctx)
	defer stop()
	// A closed stdout (leasetop demo --headless | head) must end the demo
	// through its cleanup, not kill it with SIGPIPE and leave the server's
	// folder behind: writes then fail with EPIPE, which the demo handles.
	signal.Ignore(syscall.SIGPIPE)
	defer signal.Reset(syscall.SIGPIPE)

	db, err := openDemoDB(ctx, env, *f.dsn, &cfg)
	if err != nil {
		return interrupted(ctx, err)
	}
	defer db.Close()
	if *f.headless {
		return runHeadless(ctx, env, db, cfg)
	}
	return runDemoMonitor(ctx, env, db, cfg, keys, th)
}

// config turns the flags into a demo.Config (defaults filled in by the demo).
func (f *demoFlags) config() (demo.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return demo.Config{}, fmt.Errorf("find the leasetop binary to run the devices: %w", err)
	}
	cfg := demo.Config{
		Accounts: *f.accounts,
		Sessions: *f.sessions,
		TTL:      *f.ttl,
		Duration: *f.duration,
		Seed:     *f.seed,
		NoChaos:  *f.noChaos,
		Exe:      exe,
	}
	for _, d := range strings.Split(*f.devices, ",") {
		if d = strings.TrimSpace(d); d != "" {
			cfg.Devices = append(cfg.Devices, d)
		}
	}
	if cfg.Devices == nil {
		return cfg, usageErrorf("demo: --devices must name at least one device")
	}
	if cfg.Mix, err = device.ParseMix(*f.strategy); err != nil {
		return cfg, usageErrorf("demo: %v (see leasetop demo -h)", err)
	}
	if *f.headless && cfg.Duration == 0 {
		cfg.Duration = 30 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = demo.NewSeed()
	}
	if err := demo.Validate(cfg); err != nil {
		return cfg, usageErrorf("demo: %v (see leasetop demo -h)", err)
	}
	return cfg, nil
}

// openDemoDB opens the demo's database (see demo.OpenDB) with the exit codes
// and one-line errors of every command that connects.
func openDemoDB(ctx context.Context, env Env, flagDSN string, cfg *demo.Config) (*demo.DB, error) {
	meter := newMeter(env, "demo: ")
	meter.Start("starting an embedded PostgreSQL", 0, "")
	cfg.Starting = meter.Step
	db, err := demo.OpenDB(ctx, resolveDSN(env, flagDSN), cfg)
	meter.Done("")
	cfg.Starting = nil
	var embedded *demo.EmbeddedError
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, pgserver.ErrNoBinaries):
		return nil, &ExitError{Code: ExitFailure, Err: err}
	case errors.As(err, &embedded):
		return nil, err
	}
	return nil, connError(err)
}

// demoOutcome is the exit of a finished demo: 1 if an invariant broke,
// 128+N if signal N interrupted it (in), else 0.
func demoOutcome(out demo.Outcome, in *Interrupted) error {
	switch {
	case !out.OK():
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("demo: %d invariant violations (listed above)", len(out.Violations))}
	case in != nil:
		return fmt.Errorf("demo %w; everything it started was stopped and removed", in)
	}
	return nil
}
