package ui

import (
	"slices"

	"github.com/leasetop/leasetop/data"
)

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

// reselectEvent keeps the events pane's cursor on the same event, except
// when it is on the newest: then it follows new events, like tail -f.
func (m *Model) reselectEvent() {
	evs := m.events()
	if len(evs) == 0 {
		m.evCur, m.evOf, m.evSel = 0, 0, 0
		return
	}
	if m.evCur == 0 {
		m.evOf, m.evSel = 0, evs[0].ID
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
	evs := m.events()
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
	m.evOf = min(max(m.evOf, 0), max(len(m.events())-page, 0))
}

// selectedEvent returns the event under the events pane's cursor.
func (m *Model) selectedEvent() (data.Event, bool) {
	evs := m.events()
	if m.evCur < len(evs) {
		return evs[m.evCur], true
	}
	return data.Event{}, false
}
