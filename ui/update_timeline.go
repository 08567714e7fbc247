package ui

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Messages of the timeline's reads.
type (
	// timelineMsg is the lanes' history read for a window.
	timelineMsg struct {
		gen  int
		q    historyQuery
		hist History
		err  error
	}
	// ownersMsg is who held the lanes' sessions at an instant.
	ownersMsg struct {
		at     time.Time
		keys   []monitor.Key
		owners Owners
		err    error
	}
)

// closeTimeline goes back to the main screen, live.
func (m *Model) closeTimeline() {
	m.mode = modeMain
	m.tl.scrubbed, m.tl.ownersOK = false, false
	if m.rowsDirty && m.frozen == nil {
		m.syncRows() // not rebuilt while the timeline showed
	}
}

// timelineKey handles the timeline's keys.
func (m *Model) timelineKey(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.keys
	w := m.tlWindow()
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Back) && m.tl.scrubbed:
		m.tl.scrubbed, m.tl.ownersOK = false, false
		m.setStatus(statusInfo, "live")
		return m.tlEnsure()
	case key.Matches(msg, k.Back, k.Timeline):
		m.closeTimeline()
	case key.Matches(msg, k.Help):
		m.openHelp()
	case key.Matches(msg, k.Filter):
		return m.startFilter()
	case key.Matches(msg, k.Pause):
		m.togglePause()
	case key.Matches(msg, k.Earlier):
		return m.scrubTo(m.tlCursor().Add(-w.cell))
	case key.Matches(msg, k.Later):
		return m.scrubTo(m.tlCursor().Add(w.cell))
	case key.Matches(msg, k.EarlierMore):
		return m.scrubTo(m.tlCursor().Add(-10 * w.cell))
	case key.Matches(msg, k.LaterMore):
		return m.scrubTo(m.tlCursor().Add(10 * w.cell))
	case key.Matches(msg, k.PrevEvent):
		return m.jumpEvent(-1)
	case key.Matches(msg, k.NextEvent):
		return m.jumpEvent(1)
	case key.Matches(msg, k.ZoomIn):
		return m.zoomBy(-1)
	case key.Matches(msg, k.ZoomOut):
		return m.zoomBy(1)
	case key.Matches(msg, k.Up):
		return m.scrollLanes(-1)
	case key.Matches(msg, k.Down):
		return m.scrollLanes(1)
	case key.Matches(msg, k.PageUp):
		return m.scrollLanes(-m.tlGeometry().lanes)
	case key.Matches(msg, k.PageDown):
		return m.scrollLanes(m.tlGeometry().lanes)
	case key.Matches(msg, k.Top):
		return m.pageLanes(lanePage{})
	case key.Matches(msg, k.Bottom):
		return m.pageLanes(lanePage{last: true})
	}
	return nil
}

// tlNow is the server's time the live timeline ends at (frozen while
// paused).
func (m *Model) tlNow() time.Time { return m.shown().ServerNow(m.shownNow()) }

// tlCursor is the cursor's instant: the scrubbed one, or now.
func (m *Model) tlCursor() time.Time {
	if m.tl.scrubbed {
		return m.tl.cursor
	}
	return m.tlNow()
}

// scrubTo moves the cursor to t (no later than now: there it goes live),
// moving the window along when t leaves it, and asks who held what then.
func (m *Model) scrubTo(t time.Time) tea.Cmd {
	now := m.tlNow()
	if !t.Before(now) {
		m.tl.scrubbed, m.tl.ownersOK = false, false
		m.setStatus(statusInfo, "live")
		return m.tlEnsure()
	}
	w := m.tlWindow()
	if !m.tl.scrubbed {
		m.tl.end = w.until()
	}
	m.tl.scrubbed, m.tl.cursor = true, t
	span := zooms[m.tl.zoom]
	switch {
	case t.Before(w.from):
		m.tl.end = t.Add(span * 3 / 4)
	case !t.Before(w.until()):
		m.tl.end = t.Add(span / 4)
	}
	if m.tl.end.After(now) {
		m.tl.end = now
	}
	return tea.Batch(m.tlEnsure(), m.readOwners(t))
}

// jumpEvent moves the cursor to the next (dir 1) or previous (-1) event of
// the lanes read.
func (m *Model) jumpEvent(dir int) tea.Cmd {
	d := m.tl.loaded
	if d == nil {
		m.setStatus(statusInfo, "reading the history…")
		return nil
	}
	cur := m.tlCursor()
	// d.events is newest first.
	if dir > 0 {
		var next *data.Event
		for i := len(d.events) - 1; i >= 0 && next == nil; i-- {
			if d.events[i].At.After(cur) {
				next = &d.events[i]
			}
		}
		switch {
		case !d.until.IsZero() && cur.Before(d.until) && (next == nil || !next.At.Before(d.until)):
			m.setStatus(statusWarn, cutText(d.until, m.cfg.Location)) // not past events never read
			return nil
		case next != nil:
			return m.scrubTo(next.At)
		}
		m.setStatus(statusInfo, "no later event in the lanes")
		return nil
	}
	for _, ev := range d.events {
		if ev.At.Before(cur) {
			return m.scrubTo(ev.At)
		}
	}
	m.setStatus(statusInfo, "no earlier event read: zoom out (-) to look further back")
	return nil
}

// zoomBy changes the window's length, keeping the cursor in view.
func (m *Model) zoomBy(d int) tea.Cmd {
	z := min(max(m.tl.zoom+d, 0), len(zooms)-1)
	if z == m.tl.zoom {
		return nil
	}
	m.tl.zoom = z
	if m.tl.scrubbed {
		m.tl.end = m.tl.cursor.Add(zooms[z] / 4)
		if now := m.tlNow(); m.tl.end.After(now) {
			m.tl.end = now
		}
	}
	m.setStatus(statusInfo, "window "+zoomText(zooms[z]))
	return m.tlEnsure()
}

// tlWindow is the window the lanes show: the zoom's length ending now (or
// where the scrub put it), cut into the bar's columns. Its end is rounded
// up to a whole column, so the live picture moves a column at a time.
func (m *Model) tlWindow() window {
	cells := max(m.tlGeometry().bar, 1)
	cell := max(zooms[m.tl.zoom]/time.Duration(cells), time.Millisecond)
	end := m.tlNow()
	if m.tl.scrubbed {
		end = m.tl.end
	}
	q := end.Truncate(cell)
	if q.Before(end) {
		q = q.Add(cell)
	}
	return window{from: q.Add(-time.Duration(cells) * cell), cell: cell, cells: cells}
}

// readOwners asks who held the lanes' sessions at t.
func (m *Model) readOwners(t time.Time) tea.Cmd {
	read := m.cfg.Source.OwnersAtFunc
	if read == nil {
		return nil
	}
	m.tl.ownersOK = false
	if m.tl.ownersBusy { // one read at a time: a held key asks once per answer, for where the cursor is then
		m.tl.ownersNext = true
		return nil
	}
	m.tl.ownersBusy, m.tl.ownersNext = true, false
	keys := m.tl.keys
	return func() tea.Msg {
		o, err := read(keys, t)
		return ownersMsg{at: t, keys: keys, owners: o, err: err}
	}
}

func (m *Model) readOwnersIfScrubbed() tea.Cmd {
	if !m.tl.scrubbed {
		return nil
	}
	return m.readOwners(m.tl.cursor)
}

func (m *Model) onOwners(msg ownersMsg) tea.Cmd {
	m.tl.ownersBusy = false
	if !m.tl.scrubbed {
		m.tl.ownersNext = false
		return nil
	}
	if !msg.at.Equal(m.tl.cursor) || !slices.Equal(msg.keys, m.tl.keys) {
		if m.tl.ownersNext {
			return m.readOwners(m.tl.cursor) // where the cursor is now
		}
		return nil
	}
	m.tl.ownersNext = false
	m.tl.owners, m.tl.ownErr, m.tl.ownersAt, m.tl.ownersOK = msg.owners, msg.err, msg.at, true
	return nil
}

// timelineTick merges the feed's new events into the lanes and reads again
// when the window moved past what was read.
func (m *Model) timelineTick() tea.Cmd {
	if m.mode != modeTimeline {
		return nil
	}
	if d := m.tl.loaded; d != nil {
		st := m.shown()
		d.mergeLive(st.Events(), st.Version(), m.eventLimit())
	}
	if m.tl.page.n == 0 { // opened on the timeline (watch --timeline): the first lanes
		return m.pageLanes(m.tl.page)
	}
	return m.tlEnsure()
}

// cutText says that a read of the lanes' history stopped at its cap.
func cutText(until time.Time, loc *time.Location) string {
	return fmt.Sprintf("the lanes' history after %s is not read: more than %d events in the window; zoom in (+) to read less",
		until.In(loc).Format("15:04:05.000"), historyReadLimit)
}

// zoomText is a window's length: 10s, 15m, 3h.
func zoomText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Truncate(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%dh", d/time.Hour)
}

// eventLimit is how many events the State keeps (monitor.Config's default
// 500 when not set).
func (m *Model) eventLimit() int { return cmp.Or(m.cfg.State.EventLimit, 500) }
