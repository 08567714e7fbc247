package ui

import (
	"slices"
	"time"

	"github.com/leasetop/leasetop/monitor"
)

// sortMode is the sessions table's order.
type sortMode int

const (
	sortTTL     sortMode = iota // least time left first (expired at the top)
	sortAccount                 // account, then session
	sortHeld                    // held longest first
	sortHolder                  // holder label, then account and session
	sortContext                 // context, then account and session (a monitor of several databases only)
	numSortModes
)

func (s sortMode) String() string {
	switch s {
	case sortTTL:
		return "TTL left"
	case sortAccount:
		return "account"
	case sortHeld:
		return "held for"
	case sortContext:
		return "context"
	default:
		return "holder"
	}
}

// sortModes is how many orders s cycles through: the context's is the
// last, in a monitor of several databases only.
func (m *Model) sortModes() sortMode {
	if len(m.cfg.Contexts) == 0 {
		return sortContext
	}
	return numSortModes
}

// shown is the state on screen: the frozen copy while paused.
func (m *Model) shown() *monitor.State {
	if m.frozen != nil {
		return m.frozen
	}
	return m.state
}

// shownNow is the local time the screen shows: frozen while paused.
func (m *Model) shownNow() time.Time {
	if m.frozen != nil {
		return m.frozenAt
	}
	return m.now
}

// sortHold is how long navigation freezes the rows' order, so the rows
// around the cursor do not shuffle while the user looks and acts (the way
// pg_activity freezes after navigation keys). New rows sort below.
const sortHold = 3 * time.Second

// refreshRows rebuilds the filtered, sorted rows from the shown state when
// its leases, the filter, the sort or the hold changed (force), and keeps
// the selection on the same session.
func (m *Model) refreshRows() { m.rebuildRows(true) }

// syncRows rebuilds the rows only if the shown state's leases changed.
func (m *Model) syncRows() { m.rebuildRows(false) }

// bigTable is the number of leases above which a batch's changes are
// shown on a later tick instead of at once, so a busy fleet costs a bounded
// number of rebuilds (each sorts every lease): at most one per tick, and
// above hugeTable one a second.
const (
	bigTable  = 5000
	hugeTable = 20000
)

// rebuildEvery is the shortest time between two rebuilds of the rows.
func (m *Model) rebuildEvery() time.Duration {
	switch n := m.state.Len(); {
	case n > hugeTable:
		return max(time.Second, m.cfg.Tick)
	case n > bigTable:
		return m.cfg.Tick
	}
	return 0
}

func (m *Model) rebuildRows(force bool) {
	st := m.shown()
	if !force && st == m.rowsOf && st.LeasesVersion() == m.rowsVer {
		m.refreshCounts()
		return
	}
	if m.refilterRows(st) {
		m.reselect()
		m.reselectEvent()
		return
	}
	if m.unfiltered != nil { // listed again: the unfiltered rows are of the old listing
		m.rows, m.spareRows, m.unfiltered = m.unfiltered, m.rows, nil // the bigger buffer for the listing
	}
	m.rowsOf, m.rowsVer, m.rowsDirty, m.builtAt = st, st.LeasesVersion(), false, m.now
	m.rowsBy = m.query()
	m.rows = st.Rows(m.rows[:0], monitor.RowQuery{Order: m.sortBy.order(), Filter: m.filter, Held: m.heldOrder()})
	m.countIdx = st.CountIndex()
	m.refreshCounts()
	m.reselect()
	m.reselectEvent()
}

// heldOrder returns the order to keep while navigation holds it, else nil.
func (m *Model) heldOrder() []monitor.RowRef {
	if m.now.Before(m.holdUntil) {
		return m.order
	}
	return nil
}

// holdOrder starts or extends the hold; a new hold records the order on
// screen now.
func (m *Model) holdOrder() {
	if !m.now.Before(m.holdUntil) {
		m.order = slices.Clone(m.rows)
	}
	m.holdUntil = m.now.Add(sortHold)
}

// refreshCounts recomputes the header's counts at the shown time, of the
// leases the rows were built from: between two rebuilds of a big table's
// rows a tick only counts again, it does not sort every lease again.
func (m *Model) refreshCounts() {
	st := m.shown()
	m.counts = m.countIdx.At(st.ServerNow(m.shownNow()))
}
