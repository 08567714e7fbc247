package lease

import (
	"cmp"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// Defaults for the zero fields of Config.
const (
	DefaultTTL          = 15 * time.Second
	DefaultPollInterval = 2 * time.Second
	minSafetyMargin     = 100 * time.Millisecond
)

// Config sets how a Client's leases are acquired and kept. Zero fields take
// the documented defaults; New rejects a combination that cannot work.
type Config struct {
	// TTL is how long each grant and renewal lasts on the database clock.
	// Default 15 s.
	TTL time.Duration
	// RenewInterval is how often the heartbeat renews a held lease, counted
	// from the send time of the last confirmed renewal. Default TTL/3. It must
	// be shorter than TTL - SafetyMargin, so that a renewal is due before the
	// local deadline. It is also how long Queue's ticket lives (renewed every
	// half of it): a dead waiter holds a queue up for at most this long.
	RenewInterval time.Duration
	// SafetyMargin is subtracted from TTL to get the local safe deadline: the
	// lease counts as held only until sentAt + TTL - SafetyMargin, where sentAt
	// is the monotonic time the last confirmed acquire or renew request was
	// sent. It covers the difference in clock rates between this machine and
	// the database and the time the holder needs to stop. Default
	// max(TTL/10, 100 ms), and at most TTL/2.
	SafetyMargin time.Duration
	// RenewTimeout bounds one renewal attempt (it is also cut at the local
	// deadline). Default RenewInterval.
	RenewTimeout time.Duration
	// PollInterval is how long a waiting acquire sleeps between attempts
	// when no notification wakes it: PollInterval plus up to 20% jitter (so
	// a lost notification costs at most 1.2 times this much latency), or,
	// when the holder's lease ends sooner on the server clock, until 1-11 ms
	// after that end. Default 2 s.
	PollInterval time.Duration
	// ReleaseTimeout bounds Release, which runs on a context detached from the
	// caller's cancellation. Default 5 s.
	ReleaseTimeout time.Duration
	// Metrics, when set, receives measurements of acquisitions, renewals,
	// losses and time at risk (see Metrics; leaseprom.Collector for
	// Prometheus). Default none.
	Metrics *Metrics
	// Listener configures the notification listener that waiting
	// acquisitions and held leases (the holder watch: see Lease.Context)
	// share, run while anything is held or waited for and for 2 s after (so
	// that a program taking turns keeps it from one turn to the next):
	// Listener.DSN gives it a connection of its own
	// (through a transaction pooler, a direct one to the primary), and
	// Listener.Poll makes it poll lease.event instead of listening. Without
	// them it uses the store's Options, and switches to poll mode by itself
	// when listening cannot work (see data.ListenerConfig). While anything
	// waits (and for 2 s after) its catch-up reads lease.event every
	// Listener.CatchUp (300 ms by default; negative: never) for transitions
	// whose notification never came: set it negative to spare the database
	// those reads, at the cost of learning of such a transition only at the
	// next poll or renewal.
	Listener data.ListenerConfig
}

// withDefaults returns c with its zero fields filled in, or an error naming
// the first field that is out of range.
func (c Config) withDefaults() (Config, error) {
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	if err := data.ValidateTTL(c.TTL); err != nil {
		return c, err
	}
	if c.SafetyMargin == 0 {
		c.SafetyMargin = min(max(c.TTL/10, minSafetyMargin), c.TTL/2)
	}
	c.RenewInterval = cmp.Or(c.RenewInterval, c.TTL/3)
	c.RenewTimeout = cmp.Or(c.RenewTimeout, c.RenewInterval)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.ReleaseTimeout = cmp.Or(c.ReleaseTimeout, 5*time.Second)
	switch {
	case c.SafetyMargin < 0 || c.SafetyMargin >= c.TTL:
		return c, configErrorf("safety margin %s must be at least 0 and less than the TTL %s", c.SafetyMargin, c.TTL)
	case c.RenewInterval <= 0 || c.RenewInterval >= c.TTL-c.SafetyMargin:
		return c, configErrorf("renew interval %s must be greater than 0 and less than TTL - safety margin (%s - %s = %s)",
			c.RenewInterval, c.TTL, c.SafetyMargin, c.TTL-c.SafetyMargin)
	case c.RenewTimeout < 0:
		return c, configErrorf("renew timeout %s must not be negative", c.RenewTimeout)
	case c.PollInterval < 0:
		return c, configErrorf("poll interval %s must not be negative", c.PollInterval)
	case c.ReleaseTimeout < 0:
		return c, configErrorf("release timeout %s must not be negative", c.ReleaseTimeout)
	}
	return c, nil
}

func configErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{data.ErrInvalid}, args...)...)
}
