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

// knownFence is the highest fence the State knows for key: its lease's, or
// the last one seen ended.
func (s *State) knownFence(key data.Key) int64 {
	f := s.ended[key]
	if i, ok := s.leases.find(key); ok {
		f = max(f, s.leases.fence[i])
	}
	return f
}

// noteEnded records that key's lease at fence ended (or that a transition at
// that fence was seen while the snapshot showed no lease of key).
func (s *State) noteEnded(key data.Key, fence int64) {
	if fence <= s.ended[key] {
		return
	}
	s.ended[key] = fence
	if len(s.ended) <= maxEnded {
		return
	}
	fences := make([]int64, 0, len(s.ended))
	for _, f := range s.ended {
		fences = append(fences, f)
	}
	slices.SortFunc(fences, cmp.Compare)
	cut := fences[len(fences)/2]
	for k, f := range s.ended {
		if f < cut {
			delete(s.ended, k)
		}
	}
}

// notePast records the fences of a resync's events whose sessions its
// snapshot shows no lease of, and forgets those of sessions it shows (their
// lease's fence says more).
func (s *State) notePast(sync data.Sync) {
	for k := range s.ended {
		if _, ok := s.leases.find(k); ok {
			delete(s.ended, k)
		}
	}
	for _, ev := range sync.Events {
		if _, ok := s.leases.find(ev.Key); !ok && ev.Fence > 0 && (ev.Kind.Ends() || ev.Kind.Grants()) {
			s.noteEnded(ev.Key, ev.Fence)
		}
	}
}
