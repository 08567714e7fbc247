package ui

import (
	"slices"

	"github.com/leasetop/leasetop/internal/data"
)

// tableCursor is the sessions table's cursor.
func (m *Model) tableCursor() cursor {
	return newCursor(&m.cur, &m.off, len(m.rows), m.layout().tableRows)
}

// reselect puts the cursor back on the selected session wherever it now
// sorts, shifting the scroll offset by as much so that the row stays where
// it was on screen; when the session is gone the cursor keeps its position.
func (m *Model) reselect() {
	c := m.tableCursor()
	if len(m.rows) == 0 {
		c.reset()
		m.hasSel = false
		return
	}
	if m.hasSel {
		if i := m.rowIndex(m.sel); i >= 0 {
			c.follow(i)
			return
		}
	}
	c.move(0)
	m.sel, m.hasSel = m.rowKey(m.cur)
}

// moveTable moves the cursor by delta rows.
func (m *Model) moveTable(delta int) {
	if len(m.rows) == 0 {
		return
	}
	m.tableCursor().move(delta)
	m.sel, m.hasSel = m.rowKey(m.cur)
}

// clampTable keeps the cursor inside the visible rows.
func (m *Model) clampTable() { m.tableCursor().keepVisible() }

// selected returns the lease under the cursor.
func (m *Model) selected() (data.Lease, bool) {
	if !m.hasSel || m.cur >= len(m.rows) {
		return data.Lease{}, false
	}
	return m.rowLease(m.cur)
}

// eventCursor is the events pane's cursor over evs, the events it shows.
func (m *Model) eventCursor(evs []data.Event) cursor {
	return newCursor(&m.evCur, &m.evOf, len(evs), m.layout().eventRows)
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
	c := m.eventCursor(evs)
	if m.evSel != 0 {
		if i := slices.IndexFunc(evs, func(e data.Event) bool { return e.ID == m.evSel }); i >= 0 {
			c.follow(i)
			return
		}
	}
	c.move(0)
	m.evSel = evs[m.evCur].ID
}

func (m *Model) moveEvents(delta int) {
	evs := m.events()
	if len(evs) == 0 {
		return
	}
	m.eventCursor(evs).move(delta)
	m.evSel = evs[m.evCur].ID
}

func (m *Model) clampEvents() { m.eventCursor(m.events()).keepVisible() }

// selectedEvent returns the event under the events pane's cursor.
func (m *Model) selectedEvent() (data.Event, bool) {
	evs := m.events()
	if m.evCur < len(evs) {
		return evs[m.evCur], true
	}
	return data.Event{}, false
}
