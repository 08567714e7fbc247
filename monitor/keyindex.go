package monitor

import "hash/maphash"

// keyIndex finds a lease's slot by its key: an open-addressed table of slot
// numbers (plus one; 0 is empty) with linear probing, kept at most half
// full. Four bytes a slot, where a map keyed by data.Key costs some fifty.
// The keys themselves stay in the leaseTable's columns.
type keyIndex struct {
	slots []int32
	seed  maphash.Seed
	n     int
}

// init empties the index, with room for n keys.
func (x *keyIndex) init(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	*x = keyIndex{slots: make([]int32, size), seed: maphash.MakeSeed()}
}

func (x *keyIndex) hash(c uint8, acct uint32, session string) uint64 {
	h := maphash.String(x.seed, session)
	return (h ^ (uint64(acct)|uint64(c)<<32)*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9
}

func (x *keyIndex) home(t *leaseTable, slot int32) int {
	return int(x.hash(t.ctx[slot], t.account[slot], t.session[slot]) & uint64(len(x.slots)-1))
}

// find returns the slot of the key (acct, session) in context c.
func (x *keyIndex) find(t *leaseTable, c uint8, acct uint32, session string) (int32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	mask := len(x.slots) - 1
	for p := int(x.hash(c, acct, session)) & mask; ; p = (p + 1) & mask {
		s := x.slots[p] - 1
		if s < 0 {
			return 0, false
		}
		if t.account[s] == acct && t.session[s] == session && t.ctx[s] == c {
			return s, true
		}
	}
}

// insert adds slot, whose key is not in the index yet.
func (x *keyIndex) insert(t *leaseTable, slot int32) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(t)
	}
	mask := len(x.slots) - 1
	p := x.home(t, slot)
	for x.slots[p] != 0 {
		p = (p + 1) & mask
	}
	x.slots[p] = slot + 1
	x.n++
}

// grow doubles the table.
func (x *keyIndex) grow(t *leaseTable) {
	old := x.slots
	x.slots = make([]int32, max(16, 2*len(old)))
	mask := len(x.slots) - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		p := x.home(t, v-1)
		for x.slots[p] != 0 {
			p = (p + 1) & mask
		}
		x.slots[p] = v
	}
}

// remove deletes slot, whose key is in the index, shifting back the entries
// after it that probed past it (no tombstones).
func (x *keyIndex) remove(t *leaseTable, slot int32) {
	mask := len(x.slots) - 1
	p := x.home(t, slot)
	for x.slots[p] != slot+1 {
		p = (p + 1) & mask
	}
	x.slots[p] = 0
	x.n--
	for q := (p + 1) & mask; x.slots[q] != 0; q = (q + 1) & mask {
		h := x.home(t, x.slots[q]-1)
		// The entry at q may move to the hole at p unless its home lies
		// cyclically in (p, q].
		if (q > p && (h <= p || h > q)) || (q < p && h <= p && h > q) {
			x.slots[p], x.slots[q] = x.slots[q], 0
			p = q
		}
	}
}
