package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// tlGeom is how the timeline shares the screen.
type tlGeom struct {
	label, bar, right int // a lane's columns: the session, the bar, who held it at the cursor
	lanes, events     int // lanes shown; event lines (besides the pane's title), 0 for none
	pulse, legend     bool
}

func (m *Model) tlGeometry() tlGeom {
	w, h := m.width, m.height
	g := tlGeom{label: min(max(w/6, 12), 28), right: 18}
	if w >= 120 {
		g.right = 30
	}
	g.bar = max(w-g.label-g.right-2, 10)
	rest := h - 3 // header, axis, status
	if g.pulse = h >= 12; g.pulse {
		rest--
	}
	if g.legend = h >= 16; g.legend {
		rest--
	}
	if h >= 20 {
		g.events = max(h/4, 3)
		rest -= g.events + 1
	}
	g.lanes = max(rest, 1)
	return g
}

// viewTimeline is the timeline screen: the header with the pulse, the time
// axis, a lane per session, the legend, the events around the cursor and the
// status line.
func (m *Model) viewTimeline() []string {
	g := m.tlGeometry()
	w := m.tlWindow()
	cursor := -1
	if m.tl.scrubbed {
		cursor = w.col(m.tl.cursor)
	}
	lines := []string{m.timelineHeader()}
	if g.pulse {
		lines = append(lines, m.pulseLine())
	}
	lines = append(lines, m.axisLine(g, w, cursor))
	lines = append(lines, m.laneLines(g, w, cursor)...)
	for len(lines) < m.height-1-g.events-btoi(g.events > 0)-btoi(g.legend) {
		lines = append(lines, "")
	}
	if g.legend {
		lines = append(lines, m.legendLine())
	}
	if g.events > 0 {
		lines = append(lines, m.timelineEvents(g)...)
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	return append(lines, m.timelineStatus())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// timelineHeader is the main header's first line, and where in time the
// screen is: live, or "as of" the cursor.
func (m *Model) timelineHeader() string {
	s := m.styles
	where := s.live.Render("◷ timeline live") + s.dim.Render(" · window "+zoomText(zooms[m.tl.zoom]))
	if m.tl.scrubbed {
		where = s.badge.Render(" as of "+m.tl.cursor.In(m.cfg.Location).Format("15:04:05.000")+" ") +
			s.dim.Render(" · window "+zoomText(zooms[m.tl.zoom]))
	}
	if m.filter != "" {
		where += s.dim.Render(" · /") + clean(m.filter, 20)
	}
	ww := ansi.StringWidth(where)
	if ww+2 >= m.width {
		return where
	}
	w := m.width
	m.width = w - ww - 2
	line := m.headerLine1()
	m.width = w
	return line + "  " + where
}

// axisLine is the time scale, under a title for each column.
func (m *Model) axisLine(g tlGeom, w window, cursor int) string {
	s := m.styles
	right := "HELD BY now"
	if m.tl.scrubbed {
		right = "HELD BY at ▼"
	}
	return s.bold.Render(pad("SESSION", g.label)) + " " + s.dim.Render(drawAxis(w, cursor, m.cfg.Location)) + " " + s.bold.Render(pad(right, g.right))
}

// laneLines are the lanes: the session, its bar, and who held it at the
// cursor (now, when live).
func (m *Model) laneLines(g tlGeom, w window, cursor int) []string {
	s := m.styles
	if len(m.tl.keys) == 0 {
		msg := "no session had a lease or an event in this window: zoom out (-) or scrub back to look further"
		switch {
		case m.tl.loaded == nil && m.tl.loadErr == nil:
			msg = "reading the window's sessions…"
		case m.tl.loadErr != nil:
			return []string{"  " + s.bad.Render("history: "+clean(oneLine(m.tl.loadErr.Error()), 0))}
		case m.filter != "":
			msg = fmt.Sprintf("no session of this window matches %q (/ edits the filter, esc clears it)", clean(m.filter, 20))
		}
		return []string{"  " + s.dim.Render(msg)}
	}
	var note string
	switch {
	case m.tl.loadErr != nil:
		note = s.bad.Render(fit("history: "+clean(oneLine(m.tl.loadErr.Error()), 0), g.bar))
	case m.tl.loaded == nil && m.cfg.Source.TimelineFunc == nil:
		note = s.dim.Render(pad("no history to read", g.bar))
	case m.tl.loaded == nil:
		note = s.dim.Render(pad("reading the history…", g.bar))
	}
	lanes := m.timelineLanes(w)
	if bk := (barsKey{m.tl.lanesOf, w.cells, &m.styles.tl}); bk != m.tl.barsOf || len(m.tl.bars) != len(lanes) {
		m.tl.bars = make([]drawnBar, len(lanes))
		for i := range lanes {
			m.tl.bars[i] = drawLane(&lanes[i], w, &s.tl)
		}
		m.tl.barsOf = bk
	}
	out := make([]string, 0, len(lanes))
	for i := range lanes {
		if i >= g.lanes {
			break
		}
		ln := &lanes[i]
		bar := note
		if bar == "" {
			bar = withCursor(m.tl.bars[i], ln, w, cursor, &s.tl)
		}
		out = append(out, pad(keyText(ln.Key, g.label), g.label)+" "+bar+" "+m.heldCell(ln.Key, g.right))
	}
	return out
}

// heldCell says who held k at the cursor, with the TTL left then: from the
// history (OwnersAtFunc) when scrubbed, from the live state when not.
func (m *Model) heldCell(k monitor.Key, w int) string {
	s := m.styles
	if !m.tl.scrubbed {
		l, ok := m.shown().LeaseOf(k)
		if !ok {
			return s.dim.Render(pad("nobody", w))
		}
		return m.heldText(l, m.tlNow(), w)
	}
	switch {
	case m.tl.ownErr != nil && m.tl.ownersOK:
		return s.bad.Render(pad("error: "+clean(oneLine(m.tl.ownErr.Error()), 0), w))
	case !m.tl.ownersOK:
		return s.dim.Render(pad("…", w))
	}
	l, ok := m.tl.owners.Leases[k]
	if !ok {
		if hs := m.tl.owners.HistoryStart; !hs.IsZero() && m.tl.cursor.Before(hs) {
			return s.warn.Render(pad("before history", w)) // not "nobody": nobody can tell
		}
		return s.dim.Render(pad("nobody", w))
	}
	if ttl, inexact := m.tl.owners.Inexact[k]; inexact {
		return m.inexactText(l, ttl, w)
	}
	return m.heldText(l, m.tl.cursor, w)
}

// inexactText is a holder whose TTL left at the cursor the history does not
// pin: at least what the last recorded expiry leaves, at most its TTL.
func (m *Model) inexactText(l data.Lease, ttl time.Duration, w int) string {
	text := "held"
	switch left := l.ExpiresAt.Sub(m.tl.cursor); {
	case left > 0:
		text = "≥" + compact(left)
	case ttl > 0:
		text = "≤" + compact(ttl)
	}
	hw := max(w-ansi.StringWidth(text)-1, 1)
	return pad(idText(holderLabel(monitor.Span{Holder: l.Holder, Run: l.RunID}), hw), hw) + " " + text
}

// heldText is a holder and its TTL left at t: "device-2 12s", or expired.
func (m *Model) heldText(l data.Lease, t time.Time, w int) string {
	left := l.ExpiresAt.Sub(t)
	ttl := compact(left)
	if left <= 0 {
		ttl = "exp " + agoText(-left)
	}
	hw := max(w-ansi.StringWidth(ttl)-1, 1)
	text := pad(idText(holderLabel(monitor.Span{Holder: l.Holder, Run: l.RunID}), hw), hw) + " " + ttl
	if left <= 0 {
		return m.styles.bad.Render(text)
	}
	return text
}

// legendLine says what the glyphs mean.
func (m *Model) legendLine() string {
	s := m.styles
	items := []struct {
		k    monitor.MarkKind
		text string
	}{
		{monitor.MarkTakeover, "taken over"}, {monitor.MarkPreempted, "preempted"}, {monitor.MarkHandover, "handed over"},
		{monitor.MarkForced, "force released"}, {monitor.MarkZombie, "zombie renewal"}, {monitor.MarkExpired, "expired, no successor"},
		{monitor.MarkMessage, "message"}, {monitor.MarkOther, "other"}, {monitor.MarkRefused, "limit refused"},
	}
	parts := []string{s.dim.Render("█ held  ░ expired  ─ nobody")}
	for _, it := range items {
		parts = append(parts, s.tl.marks[it.k].Render(markGlyphs[it.k])+" "+s.dim.Render(it.text))
	}
	return strings.Join(parts, "  ")
}

// timelineEvents is the events pane of the lanes, centred on the cursor
// (the newest at the top while live).
func (m *Model) timelineEvents(g tlGeom) []string {
	s := m.styles
	title := "─ EVENTS of the lanes, newest first"
	var evs []data.Event
	if d := m.tl.loaded; d != nil {
		evs = d.events
	}
	at := 0
	if m.tl.scrubbed {
		title = "─ EVENTS around " + m.tl.cursor.In(m.cfg.Location).Format("15:04:05.000")
		at = len(evs)
		for i, ev := range evs {
			if !ev.At.After(m.tl.cursor) {
				at = i
				break
			}
		}
	}
	off := 0
	if m.tl.scrubbed {
		off = min(max(at-g.events/2, 0), max(len(evs)-g.events, 0))
	}
	rule := strings.Repeat("─", max(m.width-ansi.StringWidth(title)-1, 0))
	lines := []string{s.paneTitle.Render(title) + " " + s.dim.Render(rule)}
	if len(evs) == 0 {
		return append(lines, "  "+s.dim.Render("no events in the lanes' history read"))
	}
	shown := evs[off:min(off+g.events, len(evs))]
	keyW := 0
	keys := make([]string, len(shown))
	for i, ev := range shown {
		keys[i] = keyText(monitor.EventKey(ev), 24)
		keyW = max(keyW, ansi.StringWidth(keys[i]))
	}
	keyW = min(keyW, m.keyWidth())
	for i, ev := range shown {
		selected := m.tl.scrubbed && off+i == at
		lines = append(lines, m.eventLine(ev, selected, pad(keys[i], keyW), "15:04:05.000"))
	}
	return lines
}

// timelineStatus is the status message, else the timeline's keys.
func (m *Model) timelineStatus() string {
	if m.status != "" || m.filtering {
		return m.viewStatus()
	}
	k := &m.keys
	items := []struct {
		b    key.Binding
		desc string
	}{
		{k.Earlier, "scrub"}, {k.EarlierMore, "×10"}, {k.PrevEvent, "event"}, {k.ZoomIn, "zoom"},
		{k.Filter, "find"}, {k.Back, "live/back"}, {k.Help, "help"}, {k.Quit, "quit"},
	}
	var parts []string
	for _, it := range items {
		if it.b.Enabled() && len(it.b.Keys()) > 0 {
			keys := it.b.Help().Key
			switch it.b.Help().Key {
			case k.Earlier.Help().Key:
				keys += " " + k.Later.Help().Key
			case k.EarlierMore.Help().Key:
				keys = k.EarlierMore.Keys()[0] + " " + k.LaterMore.Keys()[0]
			case k.PrevEvent.Help().Key:
				keys = k.PrevEvent.Keys()[0] + " " + k.NextEvent.Keys()[0]
			case k.ZoomIn.Help().Key:
				keys = k.ZoomIn.Keys()[0] + " " + k.ZoomOut.Keys()[0]
			}
			parts = append(parts, m.styles.key.Render(keys)+" "+m.styles.dim.Render(it.desc))
		}
	}
	return strings.Join(parts, "  ")
}
