package monitor

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// Config configures a State. Zero fields take the documented defaults.
type Config struct {
	// EventLimit is how many events the State keeps for display, newest
	// first. Default 500.
	EventLimit int
	// ExpiringSoon is the fraction of a lease's TTL below which an unexpired
	// lease counts as expiring soon: its holder has missed renewals. Default
	// 0.25.
	ExpiringSoon float64
}

// State is the monitor's picture of the database: the live leases, the
// recent events, the server clock and the connection's health. It is not
// safe for concurrent use; the UI owns one, the tests' monitortest.Mirror
// guards one with a lock.
type State struct {
	cfg Config

	leases  leaseTable
	ended   map[data.Key]int64 // highest fence seen ended, for sessions with no lease shown (ended.go)
	events  []data.Event       // newest first (id descending), at most cfg.EventLimit
	seen    idSet
	applied int64 // distinct events applied
	dups    int64 // events ignored because they were already seen
	gaps    int   // resyncs that could not return every missed event

	baseline int64 // events with a larger id are tracked; set by the first resync
	synced   bool  // a resync has been applied

	clock    data.Clock
	recovery data.Recovery // the server's replication state at the last read
	syncedAt time.Time     // local time of the last successful read
	conn     data.ListenerState
	readErr  error
	// readInterval is how often the feed reads the database (0: not told
	// yet): Health's measure of an unanswered read.
	readInterval time.Duration

	malformed, dropped int64
	notifyRenewals     bool

	rate      rate
	pulse     pulse
	version   uint64       // any change to leases or events
	leasesVer uint64       // changes to the leases only
	counts    countIndexes // the header's counts (countindex.go)
	listings  uint64       // calls of Rows (Listings)
}

// NewState returns an empty State.
func NewState(cfg Config) *State {
	cfg.EventLimit = cmp.Or(cfg.EventLimit, 500)
	cfg.ExpiringSoon = cmp.Or(cfg.ExpiringSoon, 0.25)
	s := &State{cfg: cfg, ended: map[data.Key]int64{}}
	s.leases.reset(0)
	return s
}

// Clone returns an independent copy (the frozen picture of a paused screen).
func (s *State) Clone() *State {
	c := *s
	c.leases = s.leases.clone()
	c.ended = maps.Clone(s.ended)
	c.events = slices.Clone(s.events)
	c.seen = s.seen.clone()
	c.counts = s.counts.share()
	return &c
}

// Version changes whenever the leases or the events change, so a view can
// cache what it derived from them.
func (s *State) Version() uint64 { return s.version }

// LeasesVersion changes whenever a lease is added, changed or removed.
func (s *State) LeasesVersion() uint64 { return s.leasesVer }

// leasesChanged records a change to the leases.
func (s *State) leasesChanged() {
	s.version++
	s.leasesVer++
}

// Range calls fn with every lease, in no particular order, until fn returns
// false.
func (s *State) Range(fn func(l data.Lease) bool) {
	t := &s.leases
	for i := range int32(t.slots()) {
		if t.alive(i) && !fn(t.lease(i)) {
			return
		}
	}
}

// Synced reports whether a resync has been applied: before it the State
// knows nothing.
func (s *State) Synced() bool { return s.synced }

// Len returns the number of leases.
func (s *State) Len() int { return s.leases.live }

// Lease returns key's lease.
func (s *State) Lease(key data.Key) (data.Lease, bool) {
	i, ok := s.leases.find(key)
	if !ok {
		return data.Lease{}, false
	}
	return s.leases.lease(i), true
}

// Declared reports whether the NotPreemptible and Attachment of key's
// lease are its row's, read with it (a resync, the periodic read of renewed
// leases), rather than unknown: a lease the State knows only from its
// grant's event, which carries neither, reads as preemptible and without
// an attachment until its row is read (within a second of the grant: the
// periodic read sees the grant's renewed_at). An attachment set later
// (lease.set_attachment) is read with the lease's next renewal.
func (s *State) Declared(key data.Key) bool {
	i, ok := s.leases.find(key)
	return ok && s.leases.flags[i]&slotRowRead != 0
}

// Leases returns every lease, ordered by account then session.
func (s *State) Leases() []data.Lease {
	out := make([]data.Lease, 0, s.Len())
	s.Range(func(l data.Lease) bool {
		out = append(out, l)
		return true
	})
	slices.SortFunc(out, func(a, b data.Lease) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Session, b.Session))
	})
	return out
}

// Events returns the recent events, newest first. The slice is shared: do
// not modify it.
func (s *State) Events() []data.Event { return s.events }

// Seen reports whether the event with this id has been applied.
func (s *State) Seen(id int64) bool { return s.seen.Has(id) }

// Baseline is the id after which the State tracks every event: the first
// resync loads the recent tail, not the whole history.
func (s *State) Baseline() int64 { return s.baseline }

// Applied returns how many distinct events have been applied; Duplicates how
// many were ignored as already seen (expected: notifications repeat what a
// resync read).
func (s *State) Applied() int64 { return s.applied }

// Duplicates returns how many events were ignored as already seen.
func (s *State) Duplicates() int64 { return s.dups }

// Gaps returns how many resyncs had more missed events than they could read
// (the oldest of those were not seen).
func (s *State) Gaps() int { return s.gaps }

// Clock returns the server clock as last measured.
func (s *State) Clock() data.Clock { return s.clock }

// ServerNow returns the server's time at local time now.
func (s *State) ServerNow(now time.Time) time.Time {
	if s.clock.IsZero() {
		return now
	}
	return s.clock.At(now)
}

// EventsPerSecond returns the rate of live events over the last ten seconds.
func (s *State) EventsPerSecond(now time.Time) float64 { return s.rate.perSecond(now) }

// NotifyRenewals reports whether the database sends renewal notifications.
func (s *State) NotifyRenewals() bool { return s.notifyRenewals }

// Malformed returns how many notification payloads were dropped as malformed.
func (s *State) Malformed() int64 { return s.malformed }

// Counts are the header's figures.
type Counts struct {
	Held         int // unexpired leases
	ExpiringSoon int // unexpired, with less than Config.ExpiringSoon of the TTL left
	Expired      int // expired but not yet taken over or released: likely lost holders
}

// Counts returns the counts at server time serverNow. It costs two binary
// searches: the indexes behind it are rebuilt only when the leases change,
// so a screen can ask on every frame.
func (s *State) Counts(serverNow time.Time) Counts { return s.CountIndex().At(serverNow) }

// Fraction returns the part of l's TTL left at serverNow, from 0 (expired) to
// 1 (just renewed). The TTL is the lease's last renewal to its expiry.
func (s *State) Fraction(l data.Lease, serverNow time.Time) float64 {
	ttl := l.ExpiresAt.Sub(l.RenewedAt)
	if ttl <= 0 {
		return 0
	}
	f := float64(l.ExpiresAt.Sub(serverNow)) / float64(ttl)
	return min(max(f, 0), 1)
}

// ExpiringSoon is the configured fraction below which a lease is expiring
// soon.
func (s *State) ExpiringSoon() float64 { return s.cfg.ExpiringSoon }
