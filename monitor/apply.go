package monitor

import (
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Apply applies a batch taken from a Feed at local time now, and returns
// the events it had not seen before, in the order it applied them. A batch
// is applied once: the State takes a resync's leases as the Feed read them
// (Batch.Clone gives another State its own copy). In a State of several
// contexts the batch is its context's (Batch.Context) and changes nothing
// of the others.
func (s *State) Apply(b Batch, now time.Time) []data.Event {
	if b.Context < 0 || b.Context >= len(s.members) {
		panic(fmt.Sprintf("monitor: a batch of context %d applied to a State of %d", b.Context, len(s.members)))
	}
	for _, it := range b.Items {
		if it.table != nil && it.table.taken.Load() {
			panic(errAppliedTwice) // before any item: nothing half applied
		}
	}
	c := uint8(b.Context)
	var fresh []data.Event
	for _, it := range b.Items {
		switch {
		case it.Sync != nil:
			fresh = append(fresh, s.applySync(c, *it.Sync, it.table, it.At)...)
		case it.Event != nil:
			ev := *it.Event
			if s.applyEvent(c, &ev, it.At) {
				fresh = append(fresh, ev)
			}
		case it.Delta != nil:
			s.applyDelta(c, *it.Delta, it.At)
		}
	}
	m := &s.members[c]
	m.conn = b.Conn
	m.readErr = b.ReadErr
	m.readInterval = b.ReadInterval
	m.renewalsAge = b.RenewalsAge
	m.malformed, m.dropped = b.Malformed, b.Dropped
	m.notifyRenewals = b.NotifyRenewals
	return fresh
}

// ApplySync replaces the leases with a resync's and records its events
// (those not seen yet) at local time at. It returns the new events, oldest
// first.
func (s *State) ApplySync(sync data.Sync, at time.Time) []data.Event {
	return s.applySync(0, sync, nil, at)
}

// applySync is ApplySync in context c, with the leases already in columns
// when table is not nil (a Feed's resync: sync.Leases is empty then).
func (s *State) applySync(c uint8, sync data.Sync, table *resyncTable, at time.Time) []data.Event {
	m := &s.members[c]
	var read leaseTable
	if table != nil {
		read = table.take() // first: a resync applied twice changes nothing
	}
	if !m.synced {
		m.baseline = sync.After
		m.synced = true
	}
	if sync.Truncated {
		m.gaps++
	}
	s.measured(c, sync.Snapshot, at)
	switch {
	case s.several():
		s.replaceContext(c, &read, table != nil, sync.Leases)
	case table != nil:
		epoch, scratch := s.leases.epoch, s.leases.scratch
		s.leases = read
		s.leases.epoch = epoch + 1 // as reset: every RowRef of the old leases is stale
		s.leases.scratch = scratch
	default:
		s.leases.reset(len(sync.Leases))
		for _, l := range sync.Leases {
			s.leases.store(0, l, slotRowRead)
		}
	}
	s.notePast(c, sync)
	var fresh []data.Event
	named := prevHolders{}
	for _, ev := range sync.Events {
		if ev.ID == 0 {
			continue
		}
		named.name(&ev, nil)
		if !m.seen.Add(ev.ID) {
			continue // already seen; a resync repeats its window
		}
		ev.Context = m.name
		m.applied++
		s.record(c, ev)
		fresh = append(fresh, ev)
	}
	s.leasesChanged()
	return fresh
}

// replaceContext replaces context c's leases with a resync's, read into
// columns (read, when fromTable) or as leases, moved onto the State's
// clock; the other contexts' leases, and their RowRefs, stay as they are.
func (s *State) replaceContext(c uint8, read *leaseTable, fromTable bool, leases []data.Lease) {
	t := &s.leases
	for i := range int32(t.slots()) {
		if t.alive(i) && t.ctx[i] == c {
			t.remove(i)
		}
	}
	if !fromTable {
		for _, l := range leases {
			t.store(c, s.onClock(c, l), slotRowRead)
		}
		return
	}
	for i := range int32(read.slots()) {
		if read.alive(i) {
			t.store(c, s.onClock(c, read.lease(i)), read.flags[i]&^slotLive)
		}
	}
}

// onClock returns l with its instants moved onto the State's clock from
// context c's server's.
func (s *State) onClock(c uint8, l data.Lease) data.Lease {
	d := time.Duration(s.members[c].shift)
	if d == 0 {
		return l
	}
	for _, at := range []*time.Time{&l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt} {
		if !at.IsZero() {
			*at = at.Add(d)
		}
	}
	return l
}

// ApplyEvent applies one notification received at local time at. Events
// are applied once: an id already seen is ignored. An ownership transition
// at or below the highest fence the State knows for its session is
// recorded but changes no lease: a snapshot already reflected it (ended.go).
// A hand-over that does not name its previous holder's label gets the
// label of the lease the State shows for the run it replaced
// (prevholder.go). It reports whether the event was new.
func (s *State) ApplyEvent(ev data.Event, at time.Time) bool { return s.applyEvent(0, &ev, at) }

// applyEvent is ApplyEvent in context c on *ev, which it completes as it
// records it.
func (s *State) applyEvent(c uint8, evp *data.Event, at time.Time) bool {
	m := &s.members[c]
	evp.Context = m.name
	if evp.Kind == data.KindHandedOver && evp.PrevHolder == "" {
		if i, ok := s.leases.find(c, evp.Key); ok && s.leases.run[i] == evp.PrevRunID {
			evp.PrevHolder = s.leases.strs.name(s.leases.holder[i])
		}
	}
	ev := *evp
	if ev.Kind == data.KindRenewed {
		s.renewed(c, ev.Key, ev.RunID, ev.Fence, ev.At, ev.ExpiresAt)
		return false
	}
	if !m.seen.Add(ev.ID) {
		m.dups++
		return false
	}
	m.applied++
	s.rate.add(at)
	s.pulse.add(at, ev.Kind)
	s.record(c, ev)
	changed := false
	switch {
	case ev.Kind.Grants():
		if known := s.knownFence(c, ev.Key); known > 0 && ev.Fence <= known {
			break // older than what we show or saw end: a snapshot already reflected it (ended.go)
		}
		delete(m.ended, ev.Key)
		s.leases.granted(c, s.onClock(c, data.Lease{
			Key: ev.Key, RunID: ev.RunID, Holder: ev.Holder, Fence: ev.Fence,
			AcquiredAt: ev.At, RenewedAt: ev.At, ExpiresAt: ev.ExpiresAt,
		}))
		changed = true
	case ev.Kind.Ends():
		if i, ok := s.leases.find(c, ev.Key); ok && s.leases.run[i] == ev.RunID {
			s.leases.remove(i)
			changed = true
		}
		s.noteEnded(c, ev.Key, ev.Fence)
	case ev.Kind == data.KindTruncated:
		s.truncated(c) // the listener asks for a resync too
		changed = true
	}
	if changed {
		s.leasesChanged()
	} else {
		s.version++ // the events changed
	}
	return true
}

// truncated forgets context c's leases: its lease table was truncated.
func (s *State) truncated(c uint8) {
	clear(s.members[c].ended)
	if !s.several() {
		s.leases.reset(0)
		return
	}
	t := &s.leases
	for i := range int32(t.slots()) {
		if t.alive(i) && t.ctx[i] == c {
			t.remove(i)
		}
	}
}

// ApplyDelta applies a periodic read of recently renewed leases, read at
// local time at. It only extends leases the State already shows for the same
// run and fence, and takes their rows' NotPreemptible and attachment (which
// a grant's event does not carry): ownership changes come from events,
// which a delta read could otherwise overtake.
func (s *State) ApplyDelta(snap data.Snapshot, at time.Time) { s.applyDelta(0, snap, at) }

// applyDelta is ApplyDelta in context c.
func (s *State) applyDelta(c uint8, snap data.Snapshot, at time.Time) {
	s.measured(c, snap, at)
	for _, l := range snap.Leases {
		s.renewed(c, l.Key, l.RunID, l.Fence, l.RenewedAt, l.ExpiresAt)
		s.declared(c, l)
	}
}

// declared takes the NotPreemptible and attachment of l, read from its
// row, if the State shows the same run and fence in context c.
func (s *State) declared(c uint8, l data.Lease) {
	t := &s.leases
	if i, ok := t.find(c, l.Key); ok && t.run[i] == l.RunID && t.fence[i] == l.Fence && t.declared(i, l) {
		s.leasesChanged()
	}
}

func (s *State) renewed(c uint8, key data.Key, run uuid.UUID, fence int64, renewedAt, expiresAt time.Time) {
	t := &s.leases
	shift := s.members[c].shift
	i, ok := t.find(c, key)
	if !ok || t.run[i] != run || t.fence[i] != fence || unixNano(expiresAt)+shift <= t.expires[i] {
		return
	}
	t.renewed[i], t.expires[i] = unixNano(renewedAt)+shift, unixNano(expiresAt)+shift
	s.leasesChanged()
}

// measured records a successful read of context c at local time at, with
// the server clock it measured and the server's replication state. In a
// State of several contexts the clock sets how c's instants move onto the
// local clock from then on.
func (s *State) measured(c uint8, snap data.Snapshot, at time.Time) {
	m := &s.members[c]
	if clk := snap.Clock; !clk.IsZero() {
		m.clock, m.recovery = clk, snap.Recovery
		if s.several() {
			m.shift = -int64(clk.Offset())
		}
	}
	if at.After(m.syncedAt) {
		m.syncedAt = at
	}
}

// record inserts ev into context c's recent events, keeping them ordered by
// id descending and bounded.
func (s *State) record(c uint8, ev data.Event) {
	m := &s.members[c]
	n := len(m.events)
	i := sort.Search(n, func(i int) bool { return m.events[i].ID < ev.ID })
	if i == n && n >= s.cfg.EventLimit {
		return // older than everything kept
	}
	m.events = append(m.events, data.Event{})
	copy(m.events[i+1:], m.events[i:])
	m.events[i] = ev
	if len(m.events) > s.cfg.EventLimit {
		m.events = m.events[:s.cfg.EventLimit]
	}
}
