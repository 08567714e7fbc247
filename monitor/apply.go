package monitor

import (
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// Apply applies a batch taken from a Feed at local time now, and returns
// the events it had not seen before, in the order it applied them. A batch
// is applied once: the State takes a resync's leases as the Feed read them
// (Batch.Clone gives another State its own copy).
func (s *State) Apply(b Batch, now time.Time) []data.Event {
	for _, it := range b.Items {
		if it.table != nil && it.table.taken.Load() {
			panic(errAppliedTwice) // before any item: nothing half applied
		}
	}
	var fresh []data.Event
	for _, it := range b.Items {
		switch {
		case it.Sync != nil:
			fresh = append(fresh, s.applySync(*it.Sync, it.table, it.At)...)
		case it.Event != nil:
			ev := *it.Event
			if s.applyEvent(&ev, it.At) {
				fresh = append(fresh, ev)
			}
		case it.Delta != nil:
			s.ApplyDelta(*it.Delta, it.At)
		}
	}
	s.conn = b.Conn
	s.readErr = b.ReadErr
	s.readInterval = b.ReadInterval
	s.malformed, s.dropped = b.Malformed, b.Dropped
	s.notifyRenewals = b.NotifyRenewals
	return fresh
}

// ApplySync replaces the leases with a resync's and records its events
// (those not seen yet) at local time at. It returns the new events, oldest
// first.
func (s *State) ApplySync(sync data.Sync, at time.Time) []data.Event {
	return s.applySync(sync, nil, at)
}

// applySync is ApplySync with the leases already in columns when table is
// not nil (a Feed's resync: sync.Leases is empty then).
func (s *State) applySync(sync data.Sync, table *resyncTable, at time.Time) []data.Event {
	var read leaseTable
	if table != nil {
		read = table.take() // first: a resync applied twice changes nothing
	}
	if !s.synced {
		s.baseline = sync.After
		s.synced = true
	}
	if sync.Truncated {
		s.gaps++
	}
	if table != nil {
		epoch, scratch := s.leases.epoch, s.leases.scratch
		s.leases = read
		s.leases.epoch = epoch + 1 // as reset: every RowRef of the old leases is stale
		s.leases.scratch = scratch
	} else {
		s.leases.reset(len(sync.Leases))
		for _, l := range sync.Leases {
			s.leases.put(l)
		}
	}
	s.notePast(sync)
	var fresh []data.Event
	named := prevHolders{}
	for _, ev := range sync.Events {
		if ev.ID == 0 {
			continue
		}
		named.name(&ev, nil)
		if !s.seen.Add(ev.ID) {
			continue // already seen; a resync repeats its window
		}
		s.applied++
		s.record(ev)
		fresh = append(fresh, ev)
	}
	s.measured(sync.Snapshot, at)
	s.leasesChanged()
	return fresh
}

// ApplyEvent applies one notification received at local time at. Events
// are applied once: an id already seen is ignored. An ownership transition
// at or below the highest fence the State knows for its session is
// recorded but changes no lease: a snapshot already reflected it (ended.go).
// A hand-over that does not name its previous holder's label gets the
// label of the lease the State shows for the run it replaced
// (prevholder.go). It reports whether the event was new.
func (s *State) ApplyEvent(ev data.Event, at time.Time) bool { return s.applyEvent(&ev, at) }

// applyEvent is ApplyEvent on *ev, which it completes as it records it.
func (s *State) applyEvent(evp *data.Event, at time.Time) bool {
	if evp.Kind == data.KindHandedOver && evp.PrevHolder == "" {
		if l, ok := s.Lease(evp.Key); ok && l.RunID == evp.PrevRunID {
			evp.PrevHolder = l.Holder
		}
	}
	ev := *evp
	if ev.Kind == data.KindRenewed {
		s.renewed(ev.Key, ev.RunID, ev.Fence, ev.At, ev.ExpiresAt)
		return false
	}
	if !s.seen.Add(ev.ID) {
		s.dups++
		return false
	}
	s.applied++
	s.rate.add(at)
	s.pulse.add(at, ev.Kind)
	s.record(ev)
	changed := false
	switch {
	case ev.Kind.Grants():
		if known := s.knownFence(ev.Key); known > 0 && ev.Fence <= known {
			break // older than what we show or saw end: a snapshot already reflected it (ended.go)
		}
		delete(s.ended, ev.Key)
		s.leases.granted(data.Lease{
			Key: ev.Key, RunID: ev.RunID, Holder: ev.Holder, Fence: ev.Fence,
			AcquiredAt: ev.At, RenewedAt: ev.At, ExpiresAt: ev.ExpiresAt,
		})
		changed = true
	case ev.Kind.Ends():
		if i, ok := s.leases.find(ev.Key); ok && s.leases.run[i] == ev.RunID {
			s.leases.remove(i)
			changed = true
		}
		s.noteEnded(ev.Key, ev.Fence)
	case ev.Kind == data.KindTruncated:
		s.leases.reset(0) // the listener asks for a resync too
		clear(s.ended)
		changed = true
	}
	if changed {
		s.leasesChanged()
	} else {
		s.version++ // the events changed
	}
	return true
}

// ApplyDelta applies a periodic read of recently renewed leases, read at
// local time at. It only extends leases the State already shows for the same
// run and fence, and takes their rows' NotPreemptible and attachment (which
// a grant's event does not carry): ownership changes come from events,
// which a delta read could otherwise overtake.
func (s *State) ApplyDelta(snap data.Snapshot, at time.Time) {
	for _, l := range snap.Leases {
		s.renewed(l.Key, l.RunID, l.Fence, l.RenewedAt, l.ExpiresAt)
		s.declared(l)
	}
	s.measured(snap, at)
}

// declared takes the NotPreemptible and attachment of l, read from its
// row, if the State shows the same run and fence.
func (s *State) declared(l data.Lease) {
	t := &s.leases
	if i, ok := t.find(l.Key); ok && t.run[i] == l.RunID && t.fence[i] == l.Fence && t.declared(i, l) {
		s.leasesChanged()
	}
}

func (s *State) renewed(key data.Key, run uuid.UUID, fence int64, renewedAt, expiresAt time.Time) {
	t := &s.leases
	i, ok := t.find(key)
	if !ok || t.run[i] != run || t.fence[i] != fence || unixNano(expiresAt) <= t.expires[i] {
		return
	}
	t.renewed[i], t.expires[i] = unixNano(renewedAt), unixNano(expiresAt)
	s.leasesChanged()
}

// measured records a successful read at local time at, with the server
// clock it measured and the server's replication state.
func (s *State) measured(snap data.Snapshot, at time.Time) {
	if c := snap.Clock; !c.IsZero() {
		s.clock, s.recovery = c, snap.Recovery
	}
	if at.After(s.syncedAt) {
		s.syncedAt = at
	}
}

// record inserts ev into the recent events, keeping them ordered by id
// descending and bounded.
func (s *State) record(ev data.Event) {
	n := len(s.events)
	i := sort.Search(n, func(i int) bool { return s.events[i].ID < ev.ID })
	if i == n && n >= s.cfg.EventLimit {
		return // older than everything kept
	}
	s.events = append(s.events, data.Event{})
	copy(s.events[i+1:], s.events[i:])
	s.events[i] = ev
	if len(s.events) > s.cfg.EventLimit {
		s.events = s.events[:s.cfg.EventLimit]
	}
}
