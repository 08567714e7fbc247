package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// cmdMaintain keeps the history's partitions (lease.maintain_events): it
// makes the partitions of today and the next days, moves the events that
// landed in the DEFAULT partition to their day's, and with --keep drops the
// days older than that. It keeps the inbox too (lease.maintain_messages):
// records the messages that expired unobserved, and with --keep deletes
// the messages that ended longer ago. Run it from cron, daily or more often, as a member
// of lease_admin. Exit 0 done, 1 error, 2 usage.
func cmdMaintain(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "maintain", "maintain [--keep 30d] [--ahead 7] [--dsn URL]")
	dsn := dsnFlag(fs)
	keepFlag := fs.String("keep", "", "drop the days of history older than this (whole UTC days: 30d, or a Go duration such as 720h); default: drop nothing")
	ahead := fs.Int("ahead", 7, "make partitions for this many days after today (1 to 366)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("maintain takes no arguments, got %q", fs.Arg(0))
	}
	if *ahead < 1 || *ahead > 366 {
		return usageErrorf("--ahead must be between 1 and 366 days, got %d", *ahead)
	}
	var keep time.Duration
	if flagGiven(fs.FlagSet, "keep") {
		var err error
		if keep, err = parseKeep(*keepFlag); err != nil {
			return usageErrorf("--keep: %v", err)
		}
	}
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	meter := newMeter(env, "maintain: ")
	meter.Start("keeping the history's partitions", 0, "")
	changes, err := store.MaintainEvents(ctx, data.MaintainOptions{Keep: keep, Ahead: *ahead,
		Progress: func(a data.Activity) { showActivity(meter, "lease.maintain_events", a) }})
	meter.Done("")
	if err != nil {
		return connError(err)
	}
	for _, c := range changes {
		fmt.Fprintln(env.Stdout, changeLine(c))
	}
	if len(changes) == 0 {
		fmt.Fprintln(env.Stdout, "partitions are current: nothing to do")
	}
	expired, deleted, err := store.MaintainMessages(ctx, keep, maintainMessages)
	if err != nil {
		return connError(err)
	}
	if expired > 0 || deleted > 0 {
		fmt.Fprintf(env.Stdout, "inbox: recorded %d expired %s, deleted %d ended more than --keep ago\n",
			expired, plural(expired, "message", "messages"), deleted)
	}
	return nil
}

// maintainMessages is how many expired messages one maintain records (the
// rest at the next run, or when their conversation is next written).
const maintainMessages = 10000

// parseKeep reads a retention: a whole number of days ("30d") or a Go
// duration ("720h"), positive.
func parseKeep(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days > 100000 {
			return 0, fmt.Errorf("want a number of days such as 30d, got %q", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("want 30d or a duration such as 720h, got %q", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %q", s)
	}
	return d, nil
}

// changeLine is one line of maintain's report.
func changeLine(c data.PartitionChange) string {
	span := c.Until.UTC().Format("2006-01-02 15:04")
	if c.From.IsZero() {
		span = "everything before " + span
	} else {
		span = c.From.UTC().Format("2006-01-02 15:04") + " to " + span
	}
	name := termtext.Clean(c.Partition, 0)
	switch c.Action {
	case "moved":
		return fmt.Sprintf("moved %d events from the default partition to %s (%s UTC)", c.Rows, name, span)
	case "dropped":
		return fmt.Sprintf("dropped %s (%s UTC), %s freed", name, span, bytesText(c.Bytes))
	case "busy":
		return fmt.Sprintf("left %s (%s UTC): its lock was busy; the next run drops it", name, span)
	default:
		return fmt.Sprintf("%s %s (%s UTC)", termtext.Clean(c.Action, 0), name, span)
	}
}

// bytesText is n bytes in the largest binary unit that keeps it at 1 or more.
func bytesText(n int64) string {
	f, unit := float64(n), "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if f < 1024 {
			break
		}
		f, unit = f/1024, u
	}
	if unit == "B" {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, unit)
}
