package monitor

import (
	"cmp"
	"slices"
	"strings"
)

// keyOrder is every lease's slot sorted by account then session, kept from
// one listing of rows to the next: between two listings only the leases
// added since are sorted (a handful a second even at 1000 transitions/s,
// which mostly change holders, not keys) and merged in, instead of sorting
// a million keys by their texts each time.
type keyOrder struct {
	epoch uint32
	refs  []RowRef // sorted by key; some may be stale (their lease gone)
	added []int32  // slots given a new lease since refs was brought up to date
	// spare is the previous refs, which the next merge writes into: at a
	// million leases a merge once a second allocated 12 MB each time.
	spare []RowRef
}

// noteAdded records that slot i got a new key.
// A program that never lists rows (the exporter) would let added grow: past
// as many entries as slots, the order is dropped and sorted afresh when
// next asked for.
func (o *keyOrder) noteAdded(i int32, slots int) {
	if o.refs == nil {
		return
	}
	if len(o.added) >= slots {
		o.refs, o.added, o.spare = nil, nil, nil
		return
	}
	o.added = append(o.added, i)
}

func (o *keyOrder) clone() keyOrder {
	return keyOrder{epoch: o.epoch, refs: slices.Clone(o.refs), added: slices.Clone(o.added)}
}

// sorted brings the order up to date with t and returns it: live leases
// only, by account then session.
func (o *keyOrder) sorted(t *leaseTable) []RowRef {
	if o.epoch == t.epoch && o.refs != nil && len(o.added) == 0 && len(o.refs) == t.live {
		return o.refs
	}
	acctRank := t.accts.ranks() // integers first: texts only within one account
	byKey := func(a, b RowRef) int {
		return cmp.Or(cmp.Compare(acctRank[t.account[a.slot]], acctRank[t.account[b.slot]]),
			cmp.Compare(t.session[a.slot], t.session[b.slot]))
	}
	if o.epoch != t.epoch || o.refs == nil {
		// A new table: sort it all.
		o.epoch, o.added = t.epoch, o.added[:0]
		o.spare, o.refs = o.refs, sortByKey(t, acctRank)
		return o.refs
	}
	var fresh []RowRef
	for _, i := range o.added {
		if t.alive(i) {
			fresh = append(fresh, t.ref(i))
		}
	}
	o.added = o.added[:0]
	slices.SortFunc(fresh, byKey)
	fresh = slices.CompactFunc(fresh, func(a, b RowRef) bool { return a == b })
	merged := o.spare[:0]
	if cap(merged) < t.live {
		merged = make([]RowRef, 0, t.live+t.live/8)
	}
	refs := o.refs
	for len(refs) > 0 || len(fresh) > 0 {
		if len(refs) > 0 && !t.current(refs[0]) {
			refs = refs[1:]
			continue
		}
		if len(fresh) == 0 || (len(refs) > 0 && byKey(refs[0], fresh[0]) <= 0) {
			merged, refs = append(merged, refs[0]), refs[1:]
		} else {
			merged, fresh = append(merged, fresh[0]), fresh[1:]
		}
	}
	o.refs, o.spare = merged, o.refs
	return o.refs
}

// keyItem is one lease being sorted by key: what the comparisons read, side
// by side, so a sort of a million does not jump around the columns.
type keyItem struct {
	session string
	acct    int32 // the account's rank
	slot    int32
}

// sortByKey returns every lease of t by account then session: a counting
// sort by account rank, then each account's sessions compared as texts.
func sortByKey(t *leaseTable, acctRank []int32) []RowRef {
	items := make([]keyItem, 0, t.live)
	starts := make([]int, len(acctRank)+1)
	for i := range int32(t.slots()) {
		if t.alive(i) {
			r := acctRank[t.account[i]]
			items = append(items, keyItem{session: t.session[i], acct: r, slot: i})
			starts[r+1]++
		}
	}
	for r := 1; r < len(starts); r++ {
		starts[r] += starts[r-1]
	}
	sorted := make([]keyItem, len(items))
	next := slices.Clone(starts[:len(acctRank)])
	for _, it := range items {
		sorted[next[it.acct]] = it
		next[it.acct]++
	}
	items = nil
	for r := range acctRank {
		slices.SortFunc(sorted[starts[r]:starts[r+1]], func(a, b keyItem) int { return strings.Compare(a.session, b.session) })
	}
	refs := make([]RowRef, len(sorted))
	for j, it := range sorted {
		refs[j] = t.ref(it.slot)
	}
	return refs
}
