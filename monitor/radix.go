package monitor

import "math/bits"

// sortItem is one lease to sort: its slot and its sort key, made unsigned
// and relative to the smallest key.
type sortItem struct {
	k    uint64
	slot int32
}

// radixBits is the width of one digit: 2048 counters, and three passes
// cover the 33 bits of ten minutes in nanoseconds.
const radixBits = 11

// radixSort sorts items by k, stably (items of equal k keep their order),
// in as many passes as the largest k has digits, using scratch (as long as
// items) for the passes; it returns whichever of the two holds the result.
// At a million leases it takes a few tens of milliseconds where a
// comparison sort with its tie-break took several hundred.
func radixSort(items, scratch []sortItem) []sortItem {
	var top uint64
	for _, it := range items {
		top |= it.k
	}
	var count [1 << radixBits]int
	for shift := 0; shift < bits.Len64(top); shift += radixBits {
		clear(count[:])
		for _, it := range items {
			count[(it.k>>shift)&(1<<radixBits-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, it := range items {
			d := (it.k >> shift) & (1<<radixBits - 1)
			scratch[count[d]] = it
			count[d]++
		}
		items, scratch = scratch, items
	}
	return items
}
