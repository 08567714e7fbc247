package monitor

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"github.com/leasetop/leasetop/internal/data"
)

// RowRef names one lease of a State, as a row of a sorted listing (Rows):
// twelve bytes where a copy of the lease took some two hundred. Row reads
// the lease through it, as it is now.
type RowRef struct {
	slot  int32
	gen   uint32
	epoch uint32
}

// Order is the order Rows lists leases in.
type Order int

// The orders. Each breaks ties by account then session.
const (
	OrderTTL     Order = iota // earliest expiry first (expired at the top)
	OrderAccount              // account, then session
	OrderHeld                 // earliest acquired (held longest) first
	OrderHolder               // holder label
	OrderContext              // context, in the State's order of them (Config.Contexts)
)

// RowQuery is what Rows lists.
type RowQuery struct {
	Order Order
	// Filter keeps the leases whose account, session, holder or run id, or
	// context's name, contains it, in any case ("" keeps all).
	Filter string
	// Held, if set, is a listing to keep: its leases that are still there
	// come first, in its order, and the others follow in Order.
	Held []RowRef
}

// Rows appends to dst the leases q selects, in q's order. At a million
// leases it costs one pass over the columns and a sort of sixteen-byte
// integer pairs: the key order is kept between calls (keyOrder).
func (s *State) Rows(dst []RowRef, q RowQuery) []RowRef {
	s.listings++
	t := &s.leases
	byKey := t.order.sorted(t)
	keep := s.newRowFilter(q.Filter)
	keep.prepare(len(byKey))
	var heldAt []int32 // by slot: 1 + the position in q.Held of its lease
	for i, r := range q.Held {
		if t.current(r) {
			if heldAt == nil {
				heldAt = t.scratch.heldPositions(t.slots())
				defer clearHeld(heldAt, q.Held)
			}
			heldAt[r.slot] = int32(i) + 1
		}
	}
	if q.Order == OrderAccount && heldAt == nil {
		for _, r := range byKey {
			if keep.match(r.slot) {
				dst = append(dst, r)
			}
		}
		return dst
	}
	var holderRank []int32
	if q.Order == OrderHolder {
		holderRank = t.strs.ranks()
	}
	// byKey is in key order, and the radix sort is stable: sorting on the
	// order's key alone breaks its ties by account then session.
	ks, spare := t.scratch.sortBuffers(len(byKey))
	const sign = 1 << 63 // flipped, it orders int64s as uint64s
	minK := uint64(math.MaxUint64)
	for _, r := range byKey {
		i := r.slot
		if !keep.match(i) {
			continue
		}
		var k int64
		switch q.Order {
		case OrderTTL:
			k = t.expires[i]
		case OrderHeld:
			k = t.acquired[i]
		case OrderHolder:
			k = int64(holderRank[t.holder[i]])
		case OrderContext:
			k = int64(t.ctx[i])
		}
		if heldAt != nil && heldAt[i] > 0 {
			k = int64(heldAt[i]) - (1 << 62) // before every new lease, in the held order
		}
		u := uint64(k) ^ sign
		minK = min(minK, u)
		ks = append(ks, sortItem{k: u, slot: i})
	}
	for j := range ks {
		ks[j].k -= minK // fewer digits to sort on
	}
	for _, it := range radixSort(ks, spare[:len(ks)]) {
		dst = append(dst, t.ref(it.slot))
	}
	return dst
}

// clearHeld zeroes the positions of held in heldAt, which is all zero again.
func clearHeld(heldAt []int32, held []RowRef) {
	for _, r := range held {
		if int(r.slot) < len(heldAt) {
			heldAt[r.slot] = 0
		}
	}
}

// Listings is the number of listings of every lease (Rows) so far: a
// view can tell that it answered a key from the rows it had (Narrow,
// Filter), in one pass over them.
func (s *State) Listings() uint64 { return s.listings }

// Narrow keeps, in their order, the rows whose lease is still there and
// passes filter (as RowQuery.Filter): one pass and no sort. Rows listed with
// a filter that filter contains, from an unchanged State, narrowed this way
// equal a new listing with filter.
func (s *State) Narrow(rows []RowRef, filter string) []RowRef {
	kept := s.Filter(rows[:0], rows, filter)
	clear(rows[len(kept):])
	return kept
}

// Filter appends to dst, in their order, the rows whose lease is still
// there and passes filter (as RowQuery.Filter): one pass and no sort. Rows
// listed without a filter from an unchanged State, filtered this way, equal
// a new listing with filter; so a filter that is erased or changed is
// answered from them. dst may be rows[:0].
func (s *State) Filter(dst, rows []RowRef, filter string) []RowRef {
	dst = slices.Grow(dst, len(rows)) // one allocation at most, not a doubling series
	t := &s.leases
	keep := s.newRowFilter(filter)
	keep.prepare(len(rows))
	for _, r := range rows {
		if t.current(r) && keep.match(r.slot) {
			dst = append(dst, r)
		}
	}
	return dst
}

// Row returns r's lease as it is now; false if it is gone since r was
// listed (released, or a resync replaced every lease).
func (s *State) Row(r RowRef) (data.Lease, bool) {
	if !s.leases.current(r) {
		return data.Lease{}, false
	}
	return s.lease(r.slot), true
}

// Current reports whether r's lease is still there: neither released nor
// replaced by a resync since r was listed. It reads no text of the lease.
func (s *State) Current(r RowRef) bool { return s.leases.current(r) }

// RowKey returns r's key without building the whole lease.
func (s *State) RowKey(r RowRef) (Key, bool) {
	if !s.leases.current(r) {
		return Key{}, false
	}
	return Key{Context: s.members[s.leases.ctx[r.slot]].name, Key: s.leases.key(r.slot)}, true
}

// RowOf returns the RowRef k's lease has now.
func (s *State) RowOf(k Key) (RowRef, bool) {
	c, ok := s.contextIndex(k.Context)
	if !ok {
		return RowRef{}, false
	}
	i, ok := s.leases.find(c, k.Key)
	if !ok {
		return RowRef{}, false
	}
	return s.leases.ref(i), true
}

// rowFilter is a filter worked out once per interned text (accounts and
// holders repeat) and per session without allocating.
type rowFilter struct {
	t        *leaseTable
	f        string // lower case; "" keeps all
	fb       []byte // f, to search run ids' text without making strings of them
	accts    []bool // by interned account id: the account contains f
	names    []bool // by interned holder label: the label contains f
	contexts []bool // by context: its name contains f
	withRuns bool   // f could be part of a run id (hex digits and dashes)
	// set, when prepared, is whether each slot matches, by slot: worked
	// out in slot order, the columns' order, before a pass over rows in
	// another order reads one bit of each (prepare).
	set []uint64
}

func (s *State) newRowFilter(filter string) rowFilter {
	t := &s.leases
	f := strings.ToLower(filter)
	rf := rowFilter{t: t, f: f, fb: []byte(f)}
	if f == "" {
		return rf
	}
	rf.accts, rf.names = foldMatches(&t.accts, f), foldMatches(&t.strs, f)
	rf.contexts = make([]bool, len(s.members))
	for i, m := range s.members {
		rf.contexts[i] = m.name != "" && containsFold(m.name, f)
	}
	rf.withRuns = strings.Trim(f, "0123456789abcdef-") == ""
	return rf
}

// foldMatches says of each text of in whether it contains f.
func foldMatches(in *interner, f string) []bool {
	out := make([]bool, len(in.names))
	for id, name := range in.names {
		out[id] = id != 0 && containsFold(name, f)
	}
	return out
}

// prepare works out the match of every slot at once, in the columns'
// order, when a pass is to match rows of them (most of a big table): read
// in a listing's order, every row's texts were a cache miss.
func (rf *rowFilter) prepare(rows int) {
	t := rf.t
	if rf.f == "" || rows < 1024 || rows < t.slots()/8 {
		return
	}
	set := t.scratch.matchSet(t.slots())
	for i := range int32(t.slots()) {
		if t.alive(i) && rf.matchSlot(i) {
			set[i>>6] |= 1 << (i & 63)
		}
	}
	rf.set = set
}

// match reports whether slot i's lease passes the filter.
func (rf *rowFilter) match(i int32) bool {
	if rf.set != nil {
		return rf.set[i>>6]&(1<<(i&63)) != 0
	}
	return rf.matchSlot(i)
}

func (rf *rowFilter) matchSlot(i int32) bool {
	t := rf.t
	if rf.f == "" || rf.accts[t.account[i]] || rf.names[t.holder[i]] || rf.contexts[t.ctx[i]] {
		return true
	}
	if session := t.session[i]; t.flags[i]&slotSessionFolds == 0 {
		if strings.Contains(session, rf.f) {
			return true // no capital, nothing beyond ASCII: the text is its lower case
		}
	} else if containsFold(session, rf.f) {
		return true
	}
	if !rf.withRuns || t.run[i] == [16]byte{} {
		return false
	}
	var buf [36]byte
	return bytes.Contains(uuidText(&buf, t.run[i]), rf.fb)
}

// containsFold reports whether s contains f, which is lower case, in any
// case; ASCII without allocating.
func containsFold(s, f string) bool {
	if strings.Contains(s, f) {
		return true // as is: the usual case, and a fast search
	}
	folds := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80:
			return strings.Contains(strings.ToLower(s), f)
		case 'A' <= c && c <= 'Z':
			folds = true
		}
	}
	if !folds {
		return false // no capital to fold: Contains said it all
	}
	n := len(f)
outer:
	for i := 0; i+n <= len(s); i++ {
		for j := 0; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != f[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// uuidText writes id's canonical text into buf.
func uuidText(buf *[36]byte, id [16]byte) []byte {
	const hex = "0123456789abcdef"
	j := 0
	for i, b := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf[j] = '-'
			j++
		}
		buf[j], buf[j+1] = hex[b>>4], hex[b&0xf]
		j += 2
	}
	return buf[:]
}
