package ui

import (
	"strings"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The sessions table's rows are monitor.RowRefs into the shown state, not
// copies of its leases: twelve bytes a row at a million leases. A row reads
// its lease as it is now; a lease released since the rows were sorted is
// dropped from them as soon as its batch is applied (pruneRows), and a
// resync sorts them again at once, so no row ever names a lease that is gone.

// order is the monitor's order for a sort mode.
func (s sortMode) order() monitor.Order {
	switch s {
	case sortAccount:
		return monitor.OrderAccount
	case sortHeld:
		return monitor.OrderHeld
	case sortHolder:
		return monitor.OrderHolder
	case sortContext:
		return monitor.OrderContext
	}
	return monitor.OrderTTL
}

// rowKey returns the key of row i.
func (m *Model) rowKey(i int) (monitor.Key, bool) {
	if i < 0 || i >= len(m.rows) {
		return monitor.Key{}, false
	}
	return m.shown().RowKey(m.rows[i])
}

// rowLease returns the lease of row i as it is now.
func (m *Model) rowLease(i int) (data.Lease, bool) {
	if i < 0 || i >= len(m.rows) {
		return data.Lease{}, false
	}
	return m.shown().Row(m.rows[i])
}

// rowIndex returns the row of key's lease, -1 if it has none.
func (m *Model) rowIndex(key monitor.Key) int {
	ref, ok := m.shown().RowOf(key)
	if !ok {
		return -1
	}
	for i, r := range m.rows {
		if r == ref {
			return i
		}
	}
	return -1
}

// visibleRows returns the leases of rows from to end, as they are now.
func (m *Model) visibleRows(from, end int) []*data.Lease {
	ls := make([]data.Lease, 0, end-from)
	for i := from; i < end; i++ {
		if l, ok := m.rowLease(i); ok {
			ls = append(ls, l)
		}
	}
	out := make([]*data.Lease, len(ls))
	for i := range ls {
		out[i] = &ls[i]
	}
	return out
}

// pruneRows drops the rows whose lease is gone from the live state, between
// two sorts of a big table (one pass over the rows, no sort).
func (m *Model) pruneRows() {
	if m.frozen != nil || m.rowsOf != m.state {
		return
	}
	kept := m.rows[:0]
	for _, r := range m.rows {
		if m.state.Current(r) {
			kept = append(kept, r)
		}
	}
	if len(kept) != len(m.rows) {
		clear(m.rows[len(kept):])
		m.rows = kept
		m.reselect()
	}
}

// rowsQuery is what the rows list: their order, filter, and whether
// navigation held the order.
type rowsQuery struct {
	sortBy sortMode
	filter string // lower case
	held   bool
}

func (m *Model) query() rowsQuery {
	return rowsQuery{sortBy: m.sortBy, filter: strings.ToLower(m.filter), held: m.heldOrder() != nil}
}

// refilterRows answers a filter key from the rows already listed, when
// nothing else changed since: one pass over them, no listing of every
// lease and no sort (a key typed into, or erased from, the filter of a
// million leases). The first key of a filter keeps the unfiltered rows
// (m.unfiltered), which any later filter, erased or changed, is worked out
// from; a filter that only grows narrows the rows shown. It reports
// whether it answered.
func (m *Model) refilterRows(st *monitor.State) bool {
	q := m.query()
	was := m.rowsBy
	if st != m.rowsOf || st.LeasesVersion() != m.rowsVer || q.held || was.held ||
		q.sortBy != was.sortBy || q.filter == was.filter {
		return false
	}
	switch {
	case m.unfiltered != nil:
		m.rows = st.Filter(m.rows[:0], m.unfiltered, m.filter)
	case was.filter == "":
		spare := m.spareRows[:0]
		m.unfiltered, m.spareRows = m.rows, nil
		m.rows = st.Filter(spare, m.unfiltered, m.filter)
	case strings.Contains(q.filter, was.filter):
		m.rows = st.Narrow(m.rows, m.filter)
	default:
		return false
	}
	m.rowsBy = q
	return true
}
