package monitor

// rowScratch is the memory a listing of rows (State.Rows) works in, kept
// from one listing to the next and sized by the first: at a million leases
// each listing allocated some 45 MB of it, garbage a second later at 1000
// transitions/s, so the heap grew by as much between two collections
// (the target: resident memory at most 300 MB). It holds nothing between
// listings that a listing reads: a State's copy (Clone) starts without it.
type rowScratch struct {
	items, spare []sortItem // the radix sort's input and its other buffer
	heldAt       []int32    // by slot: 1 + the position in RowQuery.Held; all zero between listings
	matches      []uint64   // a filter's match of each slot, a bit each (rowFilter.prepare)
}

// sortBuffers returns an empty slice with room for n items, and a second
// buffer of the same room for the sort's passes.
func (sc *rowScratch) sortBuffers(n int) (items, spare []sortItem) {
	if cap(sc.items) < n {
		n += n / 8 // room for the fleet to grow a little
		sc.items, sc.spare = make([]sortItem, 0, n), make([]sortItem, n)
	}
	return sc.items[:0], sc.spare[:cap(sc.items)]
}

// heldPositions returns heldAt with room for slots, all zero.
func (sc *rowScratch) heldPositions(slots int) []int32 {
	if len(sc.heldAt) < slots {
		sc.heldAt = make([]int32, slots+slots/8)
	}
	return sc.heldAt
}

// matchSet returns a zeroed bit for each of slots.
func (sc *rowScratch) matchSet(slots int) []uint64 {
	n := (slots + 63) / 64
	if cap(sc.matches) < n {
		sc.matches = make([]uint64, n+n/8)
	}
	set := sc.matches[:n]
	clear(set)
	return set
}
