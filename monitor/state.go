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
	// Contexts names the databases of a State that watches several, one
	// Feed each (Feeds): the batch of context i (Batch.Context) applies to
	// its leases and events only, and its leases and events carry its name
	// (data.Lease.Context, data.Event.Context). Empty: one database, whose
	// leases and events carry no name. At most MaxContexts.
	Contexts []string
}

// MaxContexts is the most contexts one State watches.
const MaxContexts = 255

// State is the monitor's picture of the database: the live leases, the
// recent events, the server clock and the connection's health. It is not
// safe for concurrent use; the UI owns one, the tests' monitortest.Mirror
// guards one with a lock.
//
// A State of several contexts (Config.Contexts) is that picture of each of
// their databases in one table: a lease is known by its context and its
// key, each context has its own event ids, resyncs, clock and health, and
// its events are kept apart, newest first, and listed together by time
// (Events). Its leases' instants are on this machine's clock (each
// context's server times moved by the offset last measured for that
// server, so one countdown, one sort and one count fit them all), and its
// ServerNow is the local time; a State of one database keeps its server's
// times as they are.
type State struct {
	cfg Config

	leases  leaseTable
	members []member // one per context; one for a State of one database

	merged    []data.Event // Events of a State of several contexts, as of mergedVer
	mergedVer uint64
	mergedOK  bool

	rate      rate
	pulse     pulse
	version   uint64       // any change to leases or events
	leasesVer uint64       // changes to the leases only
	counts    countIndexes // the header's counts (countindex.go)
	listings  uint64       // calls of Rows (Listings)
}

// member is what a State knows of one context's database besides its
// leases.
type member struct {
	name   string             // "" in a State of one database
	ended  map[data.Key]int64 // highest fence seen ended, for sessions with no lease shown (ended.go)
	events []data.Event       // newest first (id descending), at most cfg.EventLimit
	seen   idSet
	// applied counts distinct events applied; dups those ignored because
	// they were already seen; gaps the resyncs that could not return every
	// missed event.
	applied, dups int64
	gaps          int

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
	// renewalsAge is Batch.RenewalsAge, as last told.
	renewalsAge time.Duration

	malformed, dropped int64
	notifyRenewals     bool

	// shift moves its server's instants onto the State's clock (unix ns to
	// add): minus the server's clock offset in a State of several contexts,
	// 0 in a State of one.
	shift int64
}

// NewState returns an empty State.
func NewState(cfg Config) *State {
	cfg.EventLimit = cmp.Or(cfg.EventLimit, 500)
	cfg.ExpiringSoon = cmp.Or(cfg.ExpiringSoon, 0.25)
	n := max(len(cfg.Contexts), 1)
	if n > MaxContexts {
		panic("monitor: more than MaxContexts contexts")
	}
	s := &State{cfg: cfg, members: make([]member, n)}
	for i := range s.members {
		s.members[i].ended = map[data.Key]int64{}
		if len(cfg.Contexts) > 0 {
			s.members[i].name = cfg.Contexts[i]
		}
	}
	s.leases.reset(0)
	return s
}

// several reports whether the State watches more than one database.
func (s *State) several() bool { return len(s.members) > 1 }

// Contexts returns the names of the State's contexts (Config.Contexts), nil
// for a State of one database.
func (s *State) Contexts() []string { return s.cfg.Contexts }

// Clone returns an independent copy (the frozen picture of a paused screen).
func (s *State) Clone() *State {
	c := *s
	c.leases = s.leases.clone()
	c.members = slices.Clone(s.members)
	for i := range c.members {
		m := &c.members[i]
		m.ended, m.events, m.seen = maps.Clone(m.ended), slices.Clone(m.events), m.seen.clone()
	}
	c.merged, c.mergedOK = nil, false
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
		if t.alive(i) && !fn(s.lease(i)) {
			return
		}
	}
}

// lease returns slot i's lease, with its context's name.
func (s *State) lease(i int32) data.Lease {
	l := s.leases.lease(i)
	l.Context = s.members[s.leases.ctx[i]].name
	return l
}

// Synced reports whether a resync has been applied, of any context: before
// it the State knows nothing.
func (s *State) Synced() bool {
	for i := range s.members {
		if s.members[i].synced {
			return true
		}
	}
	return false
}

// Len returns the number of leases.
func (s *State) Len() int { return s.leases.live }

// Lease returns key's lease (in the first context, in a State of several:
// LeaseOf names the context).
func (s *State) Lease(key data.Key) (data.Lease, bool) { return s.LeaseOf(Key{Key: key}) }

// LeaseOf returns k's lease.
func (s *State) LeaseOf(k Key) (data.Lease, bool) {
	c, ok := s.contextIndex(k.Context)
	if !ok {
		return data.Lease{}, false
	}
	i, ok := s.leases.find(c, k.Key)
	if !ok {
		return data.Lease{}, false
	}
	return s.lease(i), true
}

// contextIndex is the index of the context named name ("" is the first).
func (s *State) contextIndex(name string) (uint8, bool) {
	if name == "" {
		return 0, true
	}
	for i := range s.members {
		if s.members[i].name == name {
			return uint8(i), true
		}
	}
	return 0, false
}

// Declared reports whether the NotPreemptible and Attachment of k's
// lease are its row's, read with it (a resync, the periodic read of renewed
// leases), rather than unknown: a lease the State knows only from its
// grant's event, which carries neither, reads as preemptible and without
// an attachment until its row is read (within a second of the grant: the
// periodic read sees the grant's renewed_at). An attachment set later
// (lease.set_attachment) is read with the lease's next renewal.
func (s *State) Declared(k Key) bool {
	c, ok := s.contextIndex(k.Context)
	if !ok {
		return false
	}
	i, ok := s.leases.find(c, k.Key)
	return ok && s.leases.flags[i]&slotRowRead != 0
}

// Leases returns every lease, ordered by account then session (then
// context).
func (s *State) Leases() []data.Lease {
	out := make([]data.Lease, 0, s.Len())
	s.Range(func(l data.Lease) bool {
		out = append(out, l)
		return true
	})
	order := slices.Clone(s.cfg.Contexts)
	slices.SortStableFunc(out, func(a, b data.Lease) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Session, b.Session),
			cmp.Compare(slices.Index(order, a.Context), slices.Index(order, b.Context)))
	})
	return out
}

// Events returns the recent events, newest first: by id in a State of one
// database, by time in a State of several (each context's own newest
// EventLimit). The slice is shared: do not modify it.
func (s *State) Events() []data.Event {
	if !s.several() {
		return s.members[0].events
	}
	if s.mergedOK && s.mergedVer == s.version {
		return s.merged
	}
	s.merged = mergeEvents(s.merged[:0], s.members, s.cfg.EventLimit)
	s.mergedVer, s.mergedOK = s.version, true
	return s.merged
}

// Seen reports whether the event with this id has been applied (of the
// first context).
func (s *State) Seen(id int64) bool { return s.members[0].seen.Has(id) }

// Baseline is the id after which the State tracks every event (of the first
// context): the first resync loads the recent tail, not the whole history.
func (s *State) Baseline() int64 { return s.members[0].baseline }

// Applied returns how many distinct events have been applied, of every
// context; Duplicates how many were ignored as already seen (expected:
// notifications repeat what a resync read).
func (s *State) Applied() int64 {
	var n int64
	for i := range s.members {
		n += s.members[i].applied
	}
	return n
}

// Duplicates returns how many events were ignored as already seen.
func (s *State) Duplicates() int64 {
	var n int64
	for i := range s.members {
		n += s.members[i].dups
	}
	return n
}

// Gaps returns how many resyncs had more missed events than they could read
// (the oldest of those were not seen), of every context.
func (s *State) Gaps() int {
	n := 0
	for i := range s.members {
		n += s.members[i].gaps
	}
	return n
}

// Clock returns the server clock as last measured (of the first context).
func (s *State) Clock() data.Clock { return s.members[0].clock }

// ServerNow returns the server's time at local time now: the time the
// leases' instants are on. A State of several contexts has its leases on
// the local clock (State), and returns now.
func (s *State) ServerNow(now time.Time) time.Time {
	c := s.members[0].clock
	if s.several() || c.IsZero() {
		return now
	}
	return c.At(now)
}

// ServerNowIn returns the time at local time now on the server of the
// context named name ("": the first): what a time read from that database
// (an ask's deadline, a ticket's expiry) compares with. In a State of one
// database it is ServerNow.
func (s *State) ServerNowIn(name string, now time.Time) time.Time {
	c, ok := s.contextIndex(name)
	if !ok || s.members[c].clock.IsZero() {
		return now
	}
	return s.members[c].clock.At(now)
}

// EventsPerSecond returns the rate of live events over the last ten seconds.
func (s *State) EventsPerSecond(now time.Time) float64 { return s.rate.perSecond(now) }

// NotifyRenewals reports whether the database sends renewal notifications
// (the first context's).
func (s *State) NotifyRenewals() bool { return s.members[0].notifyRenewals }

// Malformed returns how many notification payloads were dropped as
// malformed, of every context.
func (s *State) Malformed() int64 {
	var n int64
	for i := range s.members {
		n += s.members[i].malformed
	}
	return n
}

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
