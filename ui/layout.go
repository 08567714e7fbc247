package ui

// layout is how the screen's height is shared.
type layout struct {
	tooSmall    bool
	header2     bool // the counts line
	contexts    bool // the contexts' line of a monitor of several databases
	tableRows   int  // session rows (besides the column header)
	showDevices bool // the devices pane, between the sessions and the events
	deviceRows  int  // device rows (besides the pane's title and column header)
	showEvents  bool
	eventRows   int // event lines (besides the pane's title)
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
	l := layout{header2: h >= 10, contexts: len(m.cfg.Contexts) > 0 && h >= 8}
	rest := h - 2 // header line 1, status line
	if l.header2 {
		rest--
	}
	if l.contexts {
		rest--
	}
	rest-- // the table's column header
	if m.dev.on && m.hasDevices() {
		n := min(max(len(m.devices()), 1), max(rest/2-2, 1))
		if rest-(n+2) >= 3 { // leave the sessions at least three rows
			l.showDevices, l.deviceRows = true, n
			rest -= n + 2
		}
	}
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
