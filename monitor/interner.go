package monitor

import (
	"maps"
	"slices"
	"strings"
)

// interner numbers the texts many leases share (accounts, holder labels,
// attachments) so a lease holds four bytes for each. Id 0 is the empty
// text. Each id counts the slots that use it and is freed, for a new text,
// when none does: labels that change with every run do not pile up.
type interner struct {
	ids   map[string]uint32
	names []string
	refs  []int32
	free  []uint32
}

func newInterner() interner {
	return interner{ids: map[string]uint32{}, names: []string{""}, refs: []int32{0}}
}

func (in *interner) clone() interner {
	return interner{ids: maps.Clone(in.ids), names: slices.Clone(in.names), refs: slices.Clone(in.refs), free: slices.Clone(in.free)}
}

// lookup returns s's id without counting a use.
func (in *interner) lookup(s string) (uint32, bool) {
	if s == "" {
		return 0, true
	}
	id, ok := in.ids[s]
	return id, ok
}

// intern returns s's id, counting one more use.
func (in *interner) intern(s string) uint32 {
	if s == "" {
		return 0
	}
	id, ok := in.ids[s]
	if !ok {
		if n := len(in.free); n > 0 {
			id, in.free = in.free[n-1], in.free[:n-1]
			in.names[id] = s
		} else {
			id = uint32(len(in.names))
			in.names, in.refs = append(in.names, s), append(in.refs, 0)
		}
		in.ids[s] = id
	}
	in.refs[id]++
	return id
}

// release counts one use of id less.
func (in *interner) release(id uint32) {
	if id == 0 {
		return
	}
	if in.refs[id]--; in.refs[id] == 0 {
		delete(in.ids, in.names[id])
		in.names[id] = ""
		in.free = append(in.free, id)
	}
}

// name returns id's text.
func (in *interner) name(id uint32) string { return in.names[id] }

// count is the number of ids in use (the empty text aside).
func (in *interner) count() int { return len(in.ids) }

// ranks returns each id's position in the texts' order ("" first).
func (in *interner) ranks() []int32 {
	ids := make([]int32, len(in.names))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(a, b int32) int { return strings.Compare(in.names[a], in.names[b]) })
	rank := make([]int32, len(ids))
	for pos, id := range ids {
		rank[id] = int32(pos)
	}
	return rank
}
