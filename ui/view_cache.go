package ui

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// viewCache keeps what the last frames rendered, so a countdown tick redraws
// only what it changes. At 100,000 leases the monitor redraws five times a
// second while nothing happens; without the cache each of those frames
// re-cleaned, re-measured and re-styled every visible cell.
//
// Every entry is keyed on everything its text depends on, so a hit returns
// exactly what rendering again would: the cache changes the cost of a frame,
// never its content (TestViewCacheIsInvisible checks that).
type viewCache struct {
	rows   []rowEntry // by position on screen
	events eventsEntry
	fitIn  []string // the previous frame's lines before fit
	fitOut []string // and after
	fitW   int      // the width they were fitted to
	hints  string   // the status line's key hints
	header headerEntry

	// How many rows and event panes were rendered rather than reused (the
	// tests check that a tick renders only what it changes).
	rowRenders, eventRenders int
}

// headerEntry is the table's column header as last rendered, and what it
// was rendered from.
type headerEntry struct {
	key  headerKey
	line string
}

type headerKey struct {
	ok                     bool
	cols                   colWidths
	width, rows, off, page int
	sortBy                 sortMode
}

// reset forgets everything (the styles changed).
func (c *viewCache) reset() { *c = viewCache{} }

// rowEntry is one table row as last rendered, and what it was rendered
// from.
type rowEntry struct {
	ok        bool
	lease     data.Lease
	cols      colWidths // the columns it was drawn in
	width     int       // the screen's (the selected row's highlight spans it)
	selected  bool
	highlight bool
	clock     rowClock
	cells     []string // by column; the cells before colTTL never change with time
	line      string
	queued    int             // the session's queue length it was drawn with
	ask       data.PendingAsk // the ask pending on it drawn (Remaining zero)
	inbox     data.Inbox      // the session's inbox it was drawn with
	slot      string          // the slots its lease holds it was drawn with
}

// staticFor reports whether the entry's time-independent cells are those of
// lease l drawn with the same columns and highlight.
func (e *rowEntry) staticFor(l *data.Lease, cols colWidths, width int, selected, highlight bool) bool {
	return e.ok && e.lease == *l && e.cols == cols && e.width == width && e.selected == selected && e.highlight == highlight
}

// rowClock is what a row's time-dependent cells (TTL, HELD, RENEWED) show
// at some instant: two instants with equal rowClocks draw those cells
// alike. Computing it costs a few integer operations; formatting and
// styling the cells is what the cache saves.
type rowClock struct {
	expired bool
	left    time.Duration // compactStep of the time left, or agoStep of the time since expiry
	filled  int           // the TTL bar's filled cells
	class   fracClass     // the bar's and RENEWED's colour
	held    time.Duration // compactStep of the time held
	renewed time.Duration // compactStep of the time since the last renewal
}

// clockOf returns row l's rowClock at serverNow, for a TTL column w cells
// wide.
func (m *Model) clockOf(l *data.Lease, st *monitor.State, serverNow time.Time, w int) rowClock {
	frac := st.Fraction(*l, serverNow)
	left := l.ExpiresAt.Sub(serverNow)
	c := rowClock{
		class:   m.fracClass(frac),
		held:    compactStep(serverNow.Sub(l.AcquiredAt)),
		renewed: compactStep(serverNow.Sub(l.RenewedAt)),
	}
	if left <= 0 {
		c.expired, c.left = true, agoStep(-left)
	} else {
		c.left, c.filled = compactStep(left), barFill(frac, w-7)
	}
	return c
}

// eventsEntry is the events pane as last rendered, and what it was
// rendered from. The pane shows no clock, so it changes only with the
// events, the cursor and the size.
type eventsEntry struct {
	ok       bool
	of       *monitor.State
	version  uint64
	filter   string
	focus    focusArea
	cur, off int
	rows     int
	width    int
	lines    []string
}

func (e *eventsEntry) matches(want eventsEntry) bool {
	return e.ok && e.of == want.of && e.version == want.version && e.filter == want.filter && e.focus == want.focus &&
		e.cur == want.cur && e.off == want.off && e.rows == want.rows && e.width == want.width
}
