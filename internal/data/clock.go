package data

import "time"

// Clock maps local monotonic time onto the database server's clock. It is
// measured by reading clock_timestamp() between two local readings t0 and t1:
// the server's reading is taken to belong to the midpoint, with half the round
// trip as its uncertainty. Go's monotonic clock makes Now immune to jumps of
// the local wall clock.
type Clock struct {
	server      time.Time // the server's reading
	local       time.Time // local time (with monotonic reading) it corresponds to
	Uncertainty time.Duration
}

// NewClock returns the Clock for a server reading taken between local times t0
// and t1.
func NewClock(server, t0, t1 time.Time) Clock {
	rtt := t1.Sub(t0)
	return Clock{server: server, local: t0.Add(rtt / 2), Uncertainty: rtt / 2}
}

// IsZero reports whether the clock was never measured.
func (c Clock) IsZero() bool { return c.server.IsZero() }

// Now returns the server's current time.
func (c Clock) Now() time.Time { return c.At(time.Now()) }

// At returns the server time corresponding to local time t (which should carry
// a monotonic reading, as time.Now's does).
func (c Clock) At(t time.Time) time.Time { return c.server.Add(t.Sub(c.local)) }

// Offset returns server time minus local wall-clock time at the measurement.
func (c Clock) Offset() time.Duration { return c.server.Sub(c.local.Round(0)) }
