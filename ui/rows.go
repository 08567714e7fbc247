package ui

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/monitor"
)

// sortMode is the sessions table's order.
type sortMode int

const (
	sortTTL     sortMode = iota // least time left first (expired at the top)
	sortAccount                 // account, then session
	sortHeld                    // held longest first
	sortHolder                  // holder label, then account and session
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
	default:
		return "holder"
	}
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

// matches reports whether l passes the filter: a case-insensitive
// substring of the account, session, holder or run id.
func matches(l data.Lease, filter string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	for _, s := range []string{l.Account, l.Session, l.Holder, l.RunID.String()} {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
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
	m.rowsOf, m.rowsVer, m.rowsDirty, m.builtAt = st, st.LeasesVersion(), false, m.now
	buf := m.rowBuf[:0]
	st.Range(func(l data.Lease) bool {
		if matches(l, m.filter) {
			buf = append(buf, l)
		}
		return true
	})
	m.rowBuf = buf
	m.rows = sortRows(m.rows[:0], buf, m.sortBy, m.heldOrder())
	m.refreshCounts()
	m.reselect()
	m.reselectEvent()
}

// heldOrder returns the order to keep while navigation holds it, else nil.
func (m *Model) heldOrder() map[data.Key]int {
	if m.now.Before(m.holdUntil) {
		return m.order
	}
	return nil
}

// holdOrder starts or extends the hold; a new hold records the order on
// screen now.
func (m *Model) holdOrder() {
	if !m.now.Before(m.holdUntil) {
		m.order = make(map[data.Key]int, len(m.rows))
		for i, l := range m.rows {
			m.order[l.Key] = i
		}
	}
	m.holdUntil = m.now.Add(sortHold)
}

// refreshCounts recomputes the header's counts at the shown time.
func (m *Model) refreshCounts() {
	st := m.shown()
	m.counts = st.Counts(st.ServerNow(m.shownNow()))
}

// sortRows points rows at the leases in buf, sorted by mode; with held set,
// leases keep their held positions and new ones follow. Time orders sort on
// precomputed integers: at fleet scale the comparisons dominate.
func sortRows(rows []*data.Lease, buf []data.Lease, mode sortMode, held map[data.Key]int) []*data.Lease {
	type keyed struct {
		k int64
		l *data.Lease
	}
	byKey := func(a, b *data.Lease) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Session, b.Session))
	}
	ks := make([]keyed, len(buf))
	for i := range buf {
		l := &buf[i]
		switch mode {
		case sortTTL:
			ks[i] = keyed{l.ExpiresAt.UnixNano(), l}
		case sortHeld:
			ks[i] = keyed{l.AcquiredAt.UnixNano(), l}
		default:
			ks[i] = keyed{0, l}
		}
		if held != nil {
			if pos, ok := held[l.Key]; ok {
				ks[i].k = int64(pos) - (1 << 62) // before every new lease, in the held order
			}
		}
	}
	then := byKey
	if mode == sortHolder {
		then = func(a, b *data.Lease) int { return cmp.Or(cmp.Compare(a.Holder, b.Holder), byKey(a, b)) }
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.k != b.k {
			return cmp.Compare(a.k, b.k)
		}
		return then(a.l, b.l)
	})
	for _, k := range ks {
		rows = append(rows, k.l)
	}
	return rows
}

// reselect puts the cursor back on the selected session wherever it now
// sorts, shifting the scroll offset by as much so that the row stays where
// it was on screen; when the session is gone the cursor keeps its position.
func (m *Model) reselect() {
	if len(m.rows) == 0 {
		m.cur, m.off, m.hasSel = 0, 0, false
		return
	}
	if m.hasSel {
		if i := slices.IndexFunc(m.rows, func(l *data.Lease) bool { return l.Key == m.sel }); i >= 0 {
			m.off += i - m.cur
			m.cur = i
			m.clampTable()
			return
		}
	}
	m.cur = min(max(m.cur, 0), len(m.rows)-1)
	m.sel, m.hasSel = m.rows[m.cur].Key, true
	m.clampTable()
}

// moveTable moves the cursor by delta rows.
func (m *Model) moveTable(delta int) {
	if len(m.rows) == 0 {
		return
	}
	m.cur = min(max(m.cur+delta, 0), len(m.rows)-1)
	m.sel, m.hasSel = m.rows[m.cur].Key, true
	m.clampTable()
}

// clampTable keeps the cursor inside the visible rows.
func (m *Model) clampTable() {
	page := max(m.layout().tableRows, 1)
	if m.cur < m.off {
		m.off = m.cur
	}
	if m.cur >= m.off+page {
		m.off = m.cur - page + 1
	}
	m.off = min(max(m.off, 0), max(len(m.rows)-page, 0))
}

// selected returns the lease under the cursor.
func (m *Model) selected() (data.Lease, bool) {
	if !m.hasSel || m.cur >= len(m.rows) {
		return data.Lease{}, false
	}
	return *m.rows[m.cur], true
}

// reselectEvent keeps the events pane's cursor on the same event.
func (m *Model) reselectEvent() {
	evs := m.shown().Events()
	if len(evs) == 0 {
		m.evCur, m.evOf, m.evSel = 0, 0, 0
		return
	}
	if m.evSel != 0 {
		if i := slices.IndexFunc(evs, func(e data.Event) bool { return e.ID == m.evSel }); i >= 0 {
			m.evOf += i - m.evCur
			m.evCur = i
			m.clampEvents()
			return
		}
	}
	m.evCur = min(max(m.evCur, 0), len(evs)-1)
	m.evSel = evs[m.evCur].ID
	m.clampEvents()
}

func (m *Model) moveEvents(delta int) {
	evs := m.shown().Events()
	if len(evs) == 0 {
		return
	}
	m.evCur = min(max(m.evCur+delta, 0), len(evs)-1)
	m.evSel = evs[m.evCur].ID
	m.clampEvents()
}

func (m *Model) clampEvents() {
	page := max(m.layout().eventRows, 1)
	if m.evCur < m.evOf {
		m.evOf = m.evCur
	}
	if m.evCur >= m.evOf+page {
		m.evOf = m.evCur - page + 1
	}
	m.evOf = min(max(m.evOf, 0), max(len(m.shown().Events())-page, 0))
}

// selectedEvent returns the event under the events pane's cursor.
func (m *Model) selectedEvent() (data.Event, bool) {
	evs := m.shown().Events()
	if m.evCur < len(evs) {
		return evs[m.evCur], true
	}
	return data.Event{}, false
}

// layout is how the screen's height is shared.
type layout struct {
	tooSmall   bool
	header2    bool // the counts line
	tableRows  int  // session rows (besides the column header)
	showEvents bool
	eventRows  int // event lines (besides the pane's title)
}

// Minimum terminal size; below it the monitor only says so.
const (
	minWidth  = 30
	minHeight = 5
)

func (m *Model) layout() layout {
	w, h := m.width, m.height
	if w < minWidth || h < minHeight {
		return layout{tooSmall: true}
	}
	l := layout{header2: h >= 10}
	rest := h - 2 // header line 1, status line
	if l.header2 {
		rest--
	}
	rest-- // the table's column header
	if rest >= 11 {
		l.showEvents = true
		l.eventRows = max(rest/3, 3) - 1 // minus the pane title
		rest -= l.eventRows + 1
	}
	l.tableRows = max(rest, 1)
	if l.showEvents { // a short table lends its spare lines to the events
		spare := l.tableRows - max(len(m.rows), 1)
		if spare > 0 {
			l.tableRows -= spare
			l.eventRows += spare
		}
	}
	return l
}
