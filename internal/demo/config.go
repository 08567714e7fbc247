package demo

import (
	"cmp"
	"fmt"
	"github.com/leasetop/leasetop/internal/demo/device"
	"slices"
	"strconv"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// Defaults for the zero fields of Config.
const (
	DefaultAccounts = 2
	DefaultSessions = 4
	DefaultTTL      = device.DefaultTTL
	maxAccounts     = 20
	maxSessions     = 10
	maxDevices      = 6
)

// DefaultDevices are the devices each account's user has open.
func DefaultDevices() []string { return []string{"desktop", "browser", "phone"} }

// Config sets up a demo. Zero fields take the documented defaults.
type Config struct {
	// Accounts is how many accounts (users) there are. Default 2.
	Accounts int
	// Sessions is how many conversations each account has. Default 2.
	Sessions int
	// Limits are the accounts' plans: account i may have at most Limits[i]
	// live runs at once (0, or no entry: no limit), set by the demo as
	// lease_admin before the devices start. nil: DefaultLimits.
	Limits []int
	// Devices names the devices every account's user has open; each is one
	// OS process per account. Default desktop, browser, phone.
	Devices []string
	// TTL is the lease's time to live. Short (default 4 s), so takeovers
	// and zombies show within the first minute.
	TTL time.Duration
	// Duration ends the demo; 0 runs until the context ends.
	Duration time.Duration
	// Seed makes the chaos schedule and the devices' users reproducible.
	Seed int64
	// Mix is the strategies the devices' users choose from when they press
	// send (nil: DefaultMix; ClassicMix is refuse and wait only).
	Mix device.Mix
	// NoChaos turns the chaos schedule off (keys in the monitor still work).
	NoChaos bool
	// Prefix is prepended to every account id, so a demo on a shared
	// database touches only its own leases.
	Prefix string
	// Exe is the leasetop binary whose hidden `device` subcommand runs each
	// device.
	Exe string
	// DSN is handed to the devices (through DATABASE_URL in their
	// environment, never on their command line).
	DSN string
	// Starting, when set, is told each step of the embedded server's start
	// as it begins (OpenDB without a DSN): a first start takes seconds.
	Starting func(step string)
}

// withDefaults fills in zero fields and checks the ranges.
func (c Config) withDefaults() (Config, error) {
	c.Accounts = cmp.Or(c.Accounts, DefaultAccounts)
	c.Sessions = cmp.Or(c.Sessions, DefaultSessions)
	if len(c.Devices) == 0 {
		c.Devices = DefaultDevices()
	}
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	if c.Limits == nil {
		c.Limits = DefaultLimits()
	}
	if len(c.Mix) == 0 {
		c.Mix = device.DefaultMix()
	}
	return c, c.check()
}

// check checks the ranges of c as it is.
func (c Config) check() error {
	switch {
	case c.Accounts < 1 || c.Accounts > maxAccounts:
		return inputErrorf("accounts", "must be 1 to %d, got %d", maxAccounts, c.Accounts)
	case c.Sessions < 1 || c.Sessions > maxSessions:
		return inputErrorf("sessions", "must be 1 to %d, got %d", maxSessions, c.Sessions)
	case len(c.Devices) < 1 || len(c.Devices) > maxDevices:
		return inputErrorf("devices", "must name 1 to %d devices, got %d", maxDevices, len(c.Devices))
	case c.TTL < device.MinTTL || c.TTL > device.MaxTTL:
		return inputErrorf("ttl", "must be %s to %s, got %s", device.MinTTL, device.MaxTTL, c.TTL)
	case c.Duration < 0:
		return inputErrorf("duration", "must not be negative, got %s", c.Duration)
	case c.Exe == "":
		return inputErrorf("exe", "must name the leasetop binary that runs the devices")
	}
	for _, n := range c.Limits {
		if n < 0 || n > data.MaxSlots {
			return inputErrorf("limits", "must be 0 (no limit) to %d live runs, got %d", data.MaxSlots, n)
		}
	}
	for i, d := range c.Devices {
		if err := data.ValidateHolder(d); err != nil || d == "" || len(d) > 32 {
			return inputErrorf("device name", "%q must be 1 to 32 bytes without control characters", d)
		}
		if slices.Contains(c.Devices[:i], d) {
			return inputErrorf("device name", "%q is given twice", d)
		}
	}
	return nil
}

// DefaultLimits are the default plans: the first account on a free plan
// (1 live run at a time), the second on a team plan (3); the others
// unlimited.
func DefaultLimits() []int { return []int{1, 3} }

// Limit returns account i's limit of live runs, 0 for none.
func (c Config) Limit(i int) int {
	if i < len(c.Limits) {
		return c.Limits[i]
	}
	return 0
}

// inputErrorf is an ErrInvalid naming the bad setting.
func inputErrorf(field, format string, args ...any) error {
	return &data.InputError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Validate checks a configuration as a command line gives it: every range
// as New checks it, but with no default filled in, so a zero Accounts,
// Sessions or TTL (--accounts 0) is refused instead of taking the default.
func Validate(c Config) error {
	return c.check()
}

// Account returns the id of account i (from 0).
func (c Config) Account(i int) string {
	names := [...]string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell"}
	if i < len(names) {
		return c.Prefix + names[i]
	}
	return c.Prefix + "acct-" + strconv.Itoa(i+1)
}

// Session returns the id of conversation j (from 0) of an account.
func Session(j int) string { return "chat-" + strconv.Itoa(j+1) }

// AccountIDs returns every account id.
func (c Config) AccountIDs() []string {
	ids := make([]string, c.Accounts)
	for i := range ids {
		ids[i] = c.Account(i)
	}
	return ids
}

// freePlanSessions is how many conversations an account on the free plan
// (a limit of 1 live run) has open: fewer users, so that its refusals at
// the limit do not fill the events pane.
const freePlanSessions = 2

// SessionIDsOf returns the conversation ids account i has: SessionIDs, or
// the first freePlanSessions of them on the free plan.
func (c Config) SessionIDsOf(i int) []string {
	ids := c.SessionIDs()
	if c.Limit(i) == 1 {
		ids = ids[:min(len(ids), freePlanSessions)]
	}
	return ids
}

// SessionIDs returns the conversation ids every account has.
func (c Config) SessionIDs() []string {
	ids := make([]string, c.Sessions)
	for j := range ids {
		ids[j] = Session(j)
	}
	return ids
}
