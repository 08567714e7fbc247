package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/leasetop/leasetop/internal/data"
)

// planName names a plan by its limit, as the demo's lines say it.
func planName(slots int) string {
	if slots == 1 {
		return "free plan: 1 live run at a time"
	}
	return fmt.Sprintf("team plan: %d live runs at a time", slots)
}

// SetLimits sets each account's plan (cfg.Limits; nil: DefaultLimits) as
// the demo's login, which must be lease_admin (the embedded server's
// superuser is): one limit_set event each. OpenDB calls it before the demo
// and the monitor start, so that the monitor's listener hears nothing of
// it. A login that may not set limits leaves the accounts unlimited: Run
// says so, and the audit reads the limits in force when it starts.
func SetLimits(ctx context.Context, store *data.Store, cfg Config) error {
	if cfg.Limits == nil {
		cfg.Limits = DefaultLimits()
	}
	for i := range cfg.Accounts {
		if n := cfg.Limit(i); n > 0 {
			if _, err := store.SetLimit(ctx, cfg.Account(i), "", n); err != nil {
				return err
			}
		}
	}
	return nil
}

// readLimits reads the limits of the demo's accounts in force as it starts
// (the account's own, pool "") into the audit's record, and says each
// account's plan.
func (r *runner) readLimits(ctx context.Context) {
	set := 0
	for i := range r.cfg.Accounts {
		acct := r.cfg.Account(i)
		ls, err := r.store.Limits(ctx, acct)
		if err != nil {
			r.emit("limits", fmt.Sprintf("cannot read the limit of %s: %s", clean(acct), clean(err.Error())))
			continue
		}
		for _, l := range ls {
			if l.Pool == "" && l.Account == acct {
				r.rec.Limits[acct] = l.Slots
				r.emit("limit", fmt.Sprintf("%s: %s (set by %s)", clean(acct), planName(l.Slots), clean(l.SetBy)))
				set++
			}
		}
	}
	if set == 0 && slices.ContainsFunc(r.cfg.Limits, func(n int) bool { return n > 0 }) {
		r.emit("limits", "no plan's limit is set (the login may not be in lease_admin): the accounts run unlimited")
	}
}

// errNoLimits reports whether err is a login's lack of lease_admin.
func errNoLimits(err error) bool { return errors.Is(err, data.ErrPermission) }
