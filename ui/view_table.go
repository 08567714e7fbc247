package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// viewTable is the column header and the visible rows.
func (m *Model) viewTable(lay layout) []string {
	end := min(m.off+lay.tableRows, len(m.rows))
	visible := m.visibleRows(min(m.off, end), end)
	shown := m.shown()
	serverNow := shown.ServerNow(m.shownNow())
	content := contentWidths(visible)
	if m.queues.any() {
		content[colQueue] = 1
	}
	if m.inboxes.any() {
		content[colInbox] = 1
	}
	if m.limits.anySlots() {
		content[colSlot] = 1
		for _, l := range visible {
			content[colSlot] = max(content[colSlot], cellWidth(m.limits.slotOf(monitor.KeyOf(*l))))
		}
	}
	for _, l := range visible {
		if a, ok := m.askOf(l, m.shownNow()); ok {
			content[colAsk] = max(content[colAsk], cellWidth(askText(a)))
		}
	}
	cols := tableColumns(m.width, content)
	lines := []string{m.tableHeader(cols)}
	if len(m.rows) == 0 {
		msg := "no leases held"
		switch {
		case !shown.Synced():
			msg = "waiting for the first sync…"
		case m.filter != "":
			msg = fmt.Sprintf("no session matches %q (esc clears the filter)", clean(m.filter, 20))
		}
		return append(lines, "  "+m.styles.dim.Render(msg))
	}
	if n := end - m.off; len(m.cache.rows) < n {
		m.cache.rows = append(m.cache.rows, make([]rowEntry, n-len(m.cache.rows))...)
	}
	for i, l := range visible {
		lines = append(lines, m.tableRow(&m.cache.rows[i], cols, l, m.off+i == m.cur, serverNow, shown))
	}
	return lines
}

// tableHeader is the column titles, the sort arrow, and the rows shown
// out of how many.
func (m *Model) tableHeader(cols []column) string {
	key := headerKey{ok: true, cols: widthsOf(cols), width: m.width, rows: len(m.rows), off: m.off, page: m.layout().tableRows, sortBy: m.sortBy}
	if m.cache.header.key != key {
		m.cache.header = headerEntry{key: key, line: m.renderTableHeader(cols, key.page)}
	}
	return m.cache.header.line
}

func (m *Model) renderTableHeader(cols []column, page int) string {
	cells := make([]string, len(cols))
	sorted := map[sortMode]colID{sortTTL: colTTL, sortAccount: colAccount, sortHeld: colHeld, sortHolder: colHolder, sortContext: colContext}[m.sortBy]
	for i, c := range cols {
		title := c.title
		if c.id == sorted {
			title += sortArrow(m.sortBy)
		}
		if c.right {
			cells[i] = padLeft(title, c.width)
		} else {
			cells[i] = pad(title, c.width)
		}
	}
	line := "  " + strings.Join(cells, " ")
	if len(m.rows) > page {
		pos := fmt.Sprintf(" %d-%d/%d", m.off+1, min(m.off+page, len(m.rows)), len(m.rows))
		if ansi.StringWidth(line)+len(pos) <= m.width {
			line = pad(line, m.width-len(pos)) + pos
		}
	}
	return m.styles.bold.Render(line)
}

// tableRow renders one lease into e, the cache of its position on screen,
// and returns the line. The selected row is reverse video (one style across
// the row, so the highlight is never broken) and marked with ▶. Only what
// changed since e was rendered is rendered again: nothing when the
// countdowns read as they did, the time cells when they do not, the whole
// row when the lease or the layout changed.
func (m *Model) tableRow(e *rowEntry, cols []column, l *data.Lease, selected bool, serverNow time.Time, st *monitor.State) string {
	highlight := selected && m.focus == focusTable
	clock := m.clockOf(l, st, serverNow, ttlWidth(cols))
	queued := m.queues.length(monitor.KeyOf(*l))
	ask, _ := m.askOf(l, m.shownNow())
	ask.Remaining = 0 // the cell shows who asks, not for how long
	inbox := m.inboxes.of(monitor.KeyOf(*l))
	slot := m.limits.slotOf(monitor.KeyOf(*l))
	static := e.staticFor(l, widthsOf(cols), m.width, selected, highlight) && e.queued == queued && e.ask == ask && e.inbox == inbox &&
		e.slot == slot
	if static && e.clock == clock {
		return e.line
	}
	if len(e.cells) != len(cols) {
		e.cells = make([]string, len(cols))
		static = false
	}
	m.cache.rowRenders++
	frac := st.Fraction(*l, serverNow)
	for i, c := range cols {
		if !c.timed && static {
			continue
		}
		e.cells[i] = m.tableCell(c, l, frac, highlight, serverNow, ask)
	}
	marker := "  "
	if selected {
		marker = "▶ "
	}
	line := marker + strings.Join(e.cells, " ")
	if highlight {
		line = m.styles.selected.Render(pad(line, m.width))
	}
	*e = rowEntry{ok: true, lease: *l, cols: widthsOf(cols), width: m.width, selected: selected, highlight: highlight,
		clock: clock, cells: e.cells, line: line, queued: queued, ask: ask, inbox: inbox, slot: slot}
	return line
}

// tableCell renders one cell of lease l, padded to its column. A timed
// column's cell depends on the time too; the others' on the lease alone.
func (m *Model) tableCell(c column, l *data.Lease, frac float64, highlight bool, serverNow time.Time, ask data.PendingAsk) string {
	var text string
	var style *lipgloss.Style
	switch c.id {
	case colContext:
		text = pad(fit(clean(l.Context, 0), c.width), c.width)
		if ctx, ok := m.contextOf(l.Context); ok && ctx.Color != "" && !highlight {
			return lipgloss.NewStyle().Foreground(lipgloss.Color(ctx.Color)).Render(text)
		}
		return text
	case colAccount:
		text = idText(l.Account, c.width)
	case colSession:
		text = idText(l.Session, c.width)
	case colHolder:
		text = idText(l.Holder, c.width)
	case colRun:
		text, style = shortRun(l.RunID), &m.styles.dim
	case colFence:
		text = fmt.Sprint(l.Fence)
	case colTTL:
		return m.ttlCell(c.width, l.ExpiresAt.Sub(serverNow), frac, highlight)
	case colHeld:
		text = compact(serverNow.Sub(l.AcquiredAt))
	case colRenewed:
		text = compact(serverNow.Sub(l.RenewedAt))
		s := m.fractionStyle(frac)
		style = &s
	case colSlot:
		text = idText(m.limits.slotOf(monitor.KeyOf(*l)), c.width)
	case colQueue:
		if n := m.queues.length(monitor.KeyOf(*l)); n > 0 {
			text = fmt.Sprint(n)
		}
	case colInbox:
		text = inboxText(m.inboxes.of(monitor.KeyOf(*l)))
		if m.inboxes.of(monitor.KeyOf(*l)).Waiting > 0 {
			style = &m.styles.warn
		}
	case colAsk:
		if ask.RunID != uuid.Nil {
			text, style = idText(askText(ask), c.width), &m.styles.warn
		}
	}
	if c.right {
		text = padLeft(text, c.width)
	} else {
		text = pad(text, c.width)
	}
	if style != nil && !highlight {
		text = style.Render(text)
	}
	return text
}

// ttlWidth is the TTL column's width (it is never hidden).
func ttlWidth(cols []column) int {
	for _, c := range cols {
		if c.id == colTTL {
			return c.width
		}
	}
	return 0
}

// ttlCell is the countdown: a bar draining green, amber, red, and the time
// left; an expired lease nobody took over reads "expired 12s ago".
func (m *Model) ttlCell(w int, left time.Duration, frac float64, plain bool) string {
	if left <= 0 {
		text := pad(expiredText(-left, w), w)
		if plain {
			return text
		}
		return m.styles.bad.Render(text)
	}
	count := padLeft(compact(left), 6)
	bw := w - 7
	if bw < 3 {
		return padLeft(compact(left), w)
	}
	filled := barFill(frac, bw)
	bar, rest := strings.Repeat("█", filled), strings.Repeat("░", bw-filled)
	if plain {
		return bar + rest + " " + count
	}
	st := m.fractionStyle(frac)
	return st.Render(bar) + m.styles.barEmpty.Render(rest) + " " + st.Render(count)
}

// barFill is how many of a bw-cell TTL bar's cells are filled with frac of
// the TTL left: at least one while the lease lives.
func barFill(frac float64, bw int) int {
	if bw < 3 {
		return 0 // no bar: the cell shows only the time left
	}
	return min(max(int(math.Round(frac*float64(bw))), 1), bw)
}

// fracClass is a colour class of the TTL left.
type fracClass int8

const (
	fracGreen fracClass = iota
	fracAmber
	fracRed
)

// fracClass classes frac: green, amber below half, red below the
// expiring-soon fraction.
func (m *Model) fracClass(frac float64) fracClass {
	switch {
	case frac < m.state.ExpiringSoon():
		return fracRed
	case frac < 0.5:
		return fracAmber
	default:
		return fracGreen
	}
}

// fractionStyle colours by the TTL left (see fracClass).
func (m *Model) fractionStyle(frac float64) lipgloss.Style {
	switch m.fracClass(frac) {
	case fracRed:
		return m.styles.barRed
	case fracAmber:
		return m.styles.barAmber
	default:
		return m.styles.barGreen
	}
}

// expiredText says how long ago a lease expired, in the room there is:
// "expired 12s ago", "expired 12s", "exp 12s".
func expiredText(ago time.Duration, w int) string {
	switch a := agoText(ago); {
	case w >= len("expired  ago")+len(a):
		return "expired " + a + " ago"
	case w >= len("expired ")+len(a):
		return "expired " + a
	default:
		return "exp " + a
	}
}
