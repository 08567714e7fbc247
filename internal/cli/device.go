package cli

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/demo/device"
)

// cmdDevice is one simulated device process of the demo (hidden): the demo
// starts one per device and account, with the database in DATABASE_URL.
func cmdDevice(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "device", "device --name NAME --account ACCOUNT --sessions S1,S2 [--ttl 4s] [--seed N] [--strategy MIX] [--dsn URL]")
	dsn := dsnFlag(fs)
	name := fs.String("name", "", "the device's name (desktop, browser, phone)")
	account := fs.String("account", "", "the account its user is signed in to")
	sessions := fs.String("sessions", "", "the conversations open on it, comma-separated")
	ttl := fs.Duration("ttl", demo.DefaultTTL, "the lease's time to live")
	seed := fs.Int64("seed", 1, "seed for its user's behaviour")
	strategy := fs.String("strategy", "all", "what its user does when a conversation is busy: "+device.DefaultMix().String()+", classic or all")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	mix, err := device.ParseMix(*strategy)
	if err != nil {
		return usageErrorf("device: %v", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("device takes no arguments, got %q", fs.Arg(0))
	}
	cfg := device.Config{Name: *name, Account: *account, TTL: *ttl, Seed: *seed, Mix: mix}
	if *sessions != "" {
		cfg.Sessions = strings.Split(*sessions, ",")
	}
	if err := cfg.Validate(); err != nil {
		return usageErrorf("device: %v", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	nextMix := make(chan os.Signal, 1) // the demo's key for the next strategy mix
	signal.Notify(nextMix, syscall.SIGUSR1)
	defer signal.Stop(nextMix)
	cfg.NextMix = nextMix
	// If the demo vanishes, reports fail with EPIPE instead of killing the
	// device before it releases; WithParent then stops it.
	signal.Ignore(syscall.SIGPIPE)
	defer signal.Reset(syscall.SIGPIPE)
	ctx, unwatch := demo.WithParent(ctx)
	defer unwatch()
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	return device.Run(ctx, store, cfg, env.Stdout)
}
