package monitor

import "sort"

// idSet is a set of event ids stored as sorted, disjoint, non-adjacent
// closed ranges. Event ids are nearly consecutive, so the set stays a handful
// of ranges however many ids it holds.
type idSet struct {
	r []idRange
}

type idRange struct{ lo, hi int64 }

// Len returns the number of ranges (for tests and memory bounds).
func (s *idSet) ranges() int { return len(s.r) }

// Has reports whether id is in the set.
func (s *idSet) Has(id int64) bool {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi >= id })
	return i < len(s.r) && s.r[i].lo <= id
}

// Add adds id and reports whether it was new.
func (s *idSet) Add(id int64) bool {
	n := len(s.r)
	// Fast path: the next id after the last range.
	if n > 0 && s.r[n-1].hi+1 == id {
		s.r[n-1].hi = id
		return true
	}
	i := sort.Search(n, func(i int) bool { return s.r[i].hi >= id-1 })
	if i < n && s.r[i].lo <= id && id <= s.r[i].hi {
		return false
	}
	switch {
	case i < n && s.r[i].hi == id-1: // extends range i upwards
		s.r[i].hi = id
		if i+1 < n && s.r[i+1].lo == id+1 { // and now touches the next
			s.r[i].hi = s.r[i+1].hi
			s.r = append(s.r[:i+1], s.r[i+2:]...)
		}
	case i < n && s.r[i].lo == id+1: // extends range i downwards
		s.r[i].lo = id
	default:
		s.r = append(s.r, idRange{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = idRange{id, id}
	}
	return true
}

// clone returns an independent copy.
func (s *idSet) clone() idSet {
	return idSet{r: append([]idRange(nil), s.r...)}
}
