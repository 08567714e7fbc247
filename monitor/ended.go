package monitor

import (
	"cmp"
	"slices"

	"github.com/leasetop/leasetop/internal/data"
)

// A resync's snapshot reflects every transition committed before it, but
// returns as events only those above its window: a transition below the
// window that the State has not seen, delivered after the snapshot, is older
// than it. After an asynchronous failover the last transitions of the old
// primary arrive so (their notifications died with the old primary; the
// catch-up reads them on the new one after its snapshot). Fences rise
// strictly per session, so the State keeps, for the sessions it shows no
// lease of, the highest fence it has seen ended or outdated, and an
// ownership transition at or below the highest fence it knows for its
// session is history, not the present (TestFeedIgnoresATransitionItsSnapshotOutdated).

// maxEnded bounds the sessions whose last fence the State remembers with no
// lease shown; past it the lowest half (the oldest, fences rise across
// sessions too) is forgotten.
const maxEnded = 1 << 16

// knownFence is the highest fence the State knows for key in context c: its
// lease's, or the last one seen ended.
func (s *State) knownFence(c uint8, key data.Key) int64 {
	f := s.members[c].ended[key]
	if i, ok := s.leases.find(c, key); ok {
		f = max(f, s.leases.fence[i])
	}
	return f
}

// noteEnded records that key's lease at fence ended in context c (or that a
// transition at that fence was seen while the snapshot showed no lease of
// key).
func (s *State) noteEnded(c uint8, key data.Key, fence int64) {
	ended := s.members[c].ended
	if fence <= ended[key] {
		return
	}
	ended[key] = fence
	if len(ended) <= maxEnded {
		return
	}
	fences := make([]int64, 0, len(ended))
	for _, f := range ended {
		fences = append(fences, f)
	}
	slices.SortFunc(fences, cmp.Compare)
	cut := fences[len(fences)/2]
	for k, f := range ended {
		if f < cut {
			delete(ended, k)
		}
	}
}

// notePast records the fences of context c's resync's events whose sessions
// its snapshot shows no lease of, and forgets those of sessions it shows
// (their lease's fence says more).
func (s *State) notePast(c uint8, sync data.Sync) {
	for k := range s.members[c].ended {
		if _, ok := s.leases.find(c, k); ok {
			delete(s.members[c].ended, k)
		}
	}
	for _, ev := range sync.Events {
		if _, ok := s.leases.find(c, ev.Key); !ok && ev.Fence > 0 && (ev.Kind.Ends() || ev.Kind.Grants()) {
			s.noteEnded(c, ev.Key, ev.Fence)
		}
	}
}
