package ui

import (
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/leasetop/leasetop/monitor"
)

// TestFilterEraseNeedsNoListing: typing a filter into a big table and
// erasing it again, one key at a time, lists the leases no more: each key
// narrows or re-filters the rows already listed, in one pass over them,
// and the rows equal a fresh listing with that filter. Erasing used to list
// (and sort) every lease again at each key: about 170 ms of CPU at a
// million (the target: a filter's answer in at most 100 ms). Counted in
// listings, not time.
func TestFilterEraseNeedsNoListing(t *testing.T) {
	m, _ := scaleModel(scaleLeaseSet(20_000), 200, 50)
	for _, sortKeys := range []int{0, 1, 2} { // TTL, then account, then holder
		for range sortKeys {
			press(m, "s")
		}
		st := m.shown()
		press(m, "/")
		keys := []string{"s", "0", "0", "0", "4", "backspace", "backspace", "backspace", "backspace", "backspace"}
		for _, k := range keys {
			before := st.Listings()
			press(m, k)
			if got := st.Listings() - before; got != 0 {
				t.Errorf("sort %v, key %q (filter now %q): %d listings of every lease, want none", m.sortBy, k, m.filter, got)
			}
			want := st.Rows(nil, monitor.RowQuery{Order: m.sortBy.order(), Filter: m.filter})
			if !slices.Equal(m.rows, want) {
				t.Fatalf("sort %v, key %q (filter now %q): %d rows, want the %d of a new listing", m.sortBy, k, m.filter, len(m.rows), len(want))
			}
		}
		if m.filter != "" {
			t.Fatalf("filter %q left after erasing it", m.filter)
		}
		press(m, "esc")
	}
}

// TestFilterReusesItsRowsBuffer: the first key of a filter lists its
// matches into a buffer kept from the last filter, not a new one: at a
// million leases a new one was 12 MB, grown by doubling, enough to start a
// collection in the middle of the answer (a filter key's answer at p99
// reached 129 ms once in six runs of bench's monitor-filter). The second
// filter's first key allocates less than its rows.
func TestFilterReusesItsRowsBuffer(t *testing.T) {
	m, _ := scaleModel(scaleLeaseSet(20_000), 200, 50)
	for round := range 3 {
		press(m, "s") // another order: the rows are listed again
		press(m, "/")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		press(m, "s") // matches every lease: s0000…
		runtime.ReadMemStats(&after)
		rowsBytes := uint64(20_000 * unsafe.Sizeof(monitor.RowRef{}))
		if got := after.TotalAlloc - before.TotalAlloc; round > 0 && got >= rowsBytes {
			t.Errorf("round %d: the filter's first key allocated %d bytes, want less than the rows' %d (the kept buffer)", round, got, rowsBytes)
		}
		if len(m.rows) != 20_000 {
			t.Fatalf("round %d: %d rows, want every lease to match %q", round, len(m.rows), m.filter)
		}
		press(m, "esc")
	}
}
