package ui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Which sessions have lanes: a page of the window's sessions
// from the history (data.Store.Sessions), in key order, ended ones too,
// that match the filter. The page is asked by where it starts (lanePage),
// and its lanes are whatever the read answers: scrolling, filtering,
// resizing and zooming ask another page, read with its history.

// openTimeline shows the timeline, live, its lanes a page of the window's
// sessions around the one selected in the table (from the first when fewer
// than half a page come before it).
func (m *Model) openTimeline() tea.Cmd {
	if m.tl.zoom == 0 && m.tl.keys == nil {
		m.tl.zoom = defaultZoom
	}
	m.mode = modeTimeline
	m.tl.scrubbed = false
	p := lanePage{}
	if l, ok := m.selected(); ok {
		p = lanePage{from: monitor.KeyOf(l), back: m.tlGeometry().lanes / 2}
	}
	return m.pageLanes(p)
}

// pageLanes shows the lanes of page (its size and filter set here), read
// unless what was read is that page.
func (m *Model) pageLanes(p lanePage) tea.Cmd {
	p.n, p.match = m.tlGeometry().lanes, m.filter
	m.tl.page = p
	return tea.Batch(m.tlEnsure(), m.readOwnersIfScrubbed())
}

// scrollLanes moves the lanes d sessions on (back when d < 0), no further
// than the window's sessions go.
func (m *Model) scrollLanes(d int) tea.Cmd {
	keys := m.tl.keys
	switch {
	case len(keys) == 0 || d == 0:
		return nil
	case d < 0:
		return m.pageLanes(lanePage{from: keys[0], back: -d})
	case !m.tl.more:
		return nil // the last lanes are on screen
	case d < len(keys):
		return m.pageLanes(lanePage{from: keys[d]})
	}
	return m.pageLanes(lanePage{from: keys[len(keys)-1], after: true})
}

// timelineFiltered shows the lanes of the new filter, from the first.
func (m *Model) timelineFiltered() tea.Cmd {
	if m.mode != modeTimeline {
		return nil
	}
	if m.filter != "" {
		m.setStatus(statusInfo, fmt.Sprintf("finding the window's sessions that match %q…", clean(m.filter, 40)))
	}
	return m.pageLanes(lanePage{})
}

// timelineResized fits the lanes to a new size: as many as the screen
// holds, from the same first lane, read if that changed them.
func (m *Model) timelineResized() tea.Cmd {
	if m.mode != modeTimeline {
		return nil
	}
	p := m.tl.page
	return m.pageLanes(p)
}

// tlEnsure reads the lanes and their history when what was read is not the
// page asked or does not cover the window, unless that read is asked
// already.
func (m *Model) tlEnsure() tea.Cmd {
	if m.mode != modeTimeline {
		return nil
	}
	w := m.tlWindow()
	span := zooms[m.tl.zoom]
	covers := func(q historyQuery) bool {
		return q.page == m.tl.page && !w.from.Before(q.from) && !q.from.Before(w.from.Add(-2*span))
	}
	d := m.tl.loaded
	if d != nil && !d.stale && covers(d.q) {
		return nil
	}
	a := m.tl.asked
	if m.tl.gen > 0 && covers(a) && (d == nil || d.q.from != a.from || !d.stale) {
		return nil // asked already
	}
	if m.tl.reading || m.cfg.Source.TimelineFunc == nil {
		return nil // its answer asks again (onTimeline)
	}
	now := m.tlNow()
	q := historyQuery{page: m.tl.page, win: w, from: w.from.Add(-span / 2), until: now}
	m.tl.gen++
	m.tl.asked, m.tl.reading = q, true
	return m.readHistory(m.tl.gen, q)
}

// readHistory reads q with TimelineFunc: the page's sessions of the window
// (up to now: a live window ends in the future by up to a column) and
// their history.
func (m *Model) readHistory(gen int, q historyQuery) tea.Cmd {
	read := m.cfg.Source.TimelineFunc
	if read == nil {
		return nil
	}
	p := q.page
	lq := LanesQuery{
		Sessions: data.SessionsQuery{Since: q.win.from, Until: minTime(q.win.until(), q.until), From: p.from.Key, After: p.after,
			Back: p.back, Last: p.last, Limit: max(p.n, 1), Match: p.match},
		Since: q.from, Until: q.until,
	}
	if !lq.Sessions.Until.After(lq.Sessions.Since) {
		lq.Sessions.Until = lq.Sessions.Since.Add(time.Nanosecond)
	}
	return func() tea.Msg {
		h, err := read(lq)
		return timelineMsg{gen: gen, q: q, hist: h, err: err}
	}
}

func (m *Model) onTimeline(msg timelineMsg) tea.Cmd {
	m.tl.reading = false
	if msg.gen != m.tl.gen {
		return m.tlEnsure() // a newer read was asked
	}
	if msg.err != nil {
		m.tl.loadErr = msg.err
		m.tl.asked = historyQuery{} // not asked any more: the next tick asks again
		return nil
	}
	if msg.q.page != m.tl.page {
		return m.tlEnsure() // the lanes moved while it was read: read theirs
	}
	m.tl.loadErr = nil
	d := newHistoryData(msg.q, msg.hist)
	st := m.shown()
	d.mergeLive(st.Events(), st.Version(), m.eventLimit())
	d.stale = false // what the read missed is in the state's events, or will be read next time
	m.tl.loaded = d
	m.tl.page, m.tl.keys, m.tl.more = d.q.page, d.keys, d.more
	m.tl.asked.page = d.q.page
	if f := d.q.page.match; f != "" && msg.q.page.from == (monitor.Key{}) && !msg.q.page.last {
		m.setStatus(statusInfo, matchedText(len(d.keys), d.more, f))
	}
	if !d.until.IsZero() {
		m.setStatus(statusWarn, cutText(d.until, m.cfg.Location))
	}
	return tea.Batch(m.tlEnsure(), m.readOwnersIfScrubbed()) // the window may have moved while it was read
}

// timelineLanes builds the lanes of the history read over w.
func (m *Model) timelineLanes(w window) []monitor.Lane {
	d := m.tl.loaded
	st := m.shown()
	key := lanesKey{data: d, win: w, live: liveFingerprint(st, m.tl.keys, m.tlNow())}
	if d != nil {
		key.version = d.version
	}
	if key == m.tl.lanesOf && m.tl.lanes != nil {
		return m.tl.lanes
	}
	lanes := make([]monitor.Lane, 0, len(m.tl.keys))
	for _, k := range m.tl.keys {
		if d == nil {
			lanes = append(lanes, monitor.Lane{Key: k})
			continue
		}
		// The read starts before the window: replay from there; nothing
		// after now.
		in := monitor.LaneInput{Key: k, From: d.q.from, Until: minTime(w.until(), m.tlNow()),
			HistoryStart: d.start.HistoryStart, Events: d.byKey[k], ReadUntil: d.until}
		if l, ok := d.start.Leases[k]; ok {
			in.Start = &l
			_, inexact := d.start.Inexact[k]
			in.StartExact = !inexact
		}
		if live, ok := st.LeaseOf(k); ok {
			in.Live = &live
		}
		lanes = append(lanes, monitor.BuildLane(in))
	}
	m.tl.lanes, m.tl.lanesOf = lanes, key
	return lanes
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// matchedText says how many of the window's sessions match the filter f.
func matchedText(n int, more bool, f string) string {
	switch {
	case n == 0:
		return fmt.Sprintf("no session of the window matches %q", clean(f, 40))
	case more:
		return fmt.Sprintf("sessions of the window that match %q: the first %d (↓ for more)", clean(f, 40), n)
	case n == 1:
		return fmt.Sprintf("1 session of the window matches %q", clean(f, 40))
	}
	return fmt.Sprintf("%d sessions of the window match %q", n, clean(f, 40))
}
