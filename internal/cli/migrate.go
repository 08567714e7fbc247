package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	leasesql "github.com/leasetop/leasetop/sql"
)

func cmdMigrate(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "migrate", "migrate [--dsn URL] [--notify-renewals=true|false] [--wait 30s]")
	dsn := dsnFlag(fs)
	var notify optionalBool
	fs.Var(&notify, "notify-renewals", "also NOTIFY on every renewal (costs the commit lock; default: leave as is, off on a new schema)")
	wait := fs.Duration("wait", 30*time.Second, "give up after waiting this long for sessions that hold the lease tables' locks (live traffic waits at most 0.5s at a time)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf("migrate takes no arguments, got %q", fs.Arg(0))
	case *wait <= 0:
		return usageErrorf("--wait must be positive, got %s", *wait)
	}
	cfg, err := data.ParseConnConfig(resolveDSN(env, *dsn))
	if err != nil {
		return connError(err)
	}
	conn, err := data.Connect(ctx, cfg)
	if err != nil {
		return connError(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	opts := data.MigrateOptions{Wait: *wait}
	if notify.set {
		opts.NotifyRenewals = &notify.value
	}
	meter := newMeter(env, "migrate: ")
	meter.Start("applying the lease schema", 0, "")
	opts.Progress = func(p data.MigrateProgress) {
		what := p.File
		if p.Attempt > 1 {
			what = fmt.Sprintf("attempt %d (other sessions held locks it needs): %s", p.Attempt, p.File)
		}
		showActivity(meter, what, p.Activity)
	}
	before, err := data.MigrateWith(ctx, conn, opts)
	meter.Done("")
	if err != nil {
		return connError(err)
	}
	if owner, err := data.Owner(ctx, conn); err == nil {
		defer fmt.Fprintf(env.Stdout, "the lease functions run as %s\n", termtext.Clean(owner, 0))
	}
	switch before {
	case 0:
		fmt.Fprintf(env.Stdout, "created lease schema version %d on %s/%s\n", leasesql.Version, cfg.Host, cfg.Database)
	case leasesql.Version:
		fmt.Fprintf(env.Stdout, "lease schema version %d is current on %s/%s (functions and triggers refreshed)\n", leasesql.Version, cfg.Host, cfg.Database)
	default:
		fmt.Fprintf(env.Stdout, "upgraded lease schema from version %d to %d on %s/%s\n", before, leasesql.Version, cfg.Host, cfg.Database)
	}
	return nil
}

// optionalBool is a bool flag that remembers whether it was given.
type optionalBool struct{ set, value bool }

func (b *optionalBool) String() string {
	if !b.set {
		return ""
	}
	return fmt.Sprint(b.value)
}

func (b *optionalBool) Set(s string) error {
	switch s {
	case "true", "1", "on", "yes":
		b.set, b.value = true, true
	case "false", "0", "off", "no":
		b.set, b.value = true, false
	default:
		return fmt.Errorf("want true or false, got %q", s)
	}
	return nil
}

// IsBoolFlag lets --notify-renewals stand alone for true.
func (b *optionalBool) IsBoolFlag() bool { return true }
