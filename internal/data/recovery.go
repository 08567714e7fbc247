package data

import (
	"context"
	"time"
)

// Recovery is what a read learned about replication: whether the server is
// a hot standby, and when the last transaction it replayed committed on the
// primary.
type Recovery struct {
	// Standby is pg_is_in_recovery(): the server is a hot standby (or
	// recovering), which serves reads and refuses writes and LISTEN.
	Standby bool
	// LastReplay is pg_last_xact_replay_timestamp(): the primary's commit
	// time of the last transaction the standby replayed, on the primary's
	// clock. Zero before the first replayed commit, and on a primary.
	LastReplay time.Time
}

// Lag returns the replay lag at server time now, what now() -
// pg_last_xact_replay_timestamp() returns on the standby, and false when
// there is none to tell: on a primary, or before the first replayed commit.
// It grows while the primary commits nothing, since there is nothing to
// replay.
func (r Recovery) Lag(now time.Time) (time.Duration, bool) {
	if !r.Standby || r.LastReplay.IsZero() {
		return 0, false
	}
	return max(now.Sub(r.LastReplay), 0), true
}

// serverNow and serverColumns are the first columns of a lease read: the
// server clock, sampled once, and the replication state. Both functions
// read shared memory; on a primary the replay time is NULL.
const (
	serverNow     = `(SELECT clock_timestamp() AS t, pg_is_in_recovery() AS r, pg_last_xact_replay_timestamp() AS p)`
	serverColumns = `n.t, n.r, n.p`
)

// recoveryColumns scans n.r and n.p.
type recoveryColumns struct {
	standby bool
	replay  *time.Time
}

func (c recoveryColumns) recovery() Recovery {
	r := Recovery{Standby: c.standby}
	if c.replay != nil {
		r.LastReplay = *c.replay
	}
	return r
}

// Standby reports whether the server is a hot standby (pg_is_in_recovery()),
// which any login may ask: a listener polls there (LISTEN cannot run), and
// the CLI refuses a waiting mode there at once, where the wait would retry
// read-only errors for ever.
func (s *Store) Standby(ctx context.Context) (bool, error) {
	var standby bool
	if err := s.pool.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery()`).Scan(&standby); err != nil {
		return false, translate(err)
	}
	return standby, nil
}
