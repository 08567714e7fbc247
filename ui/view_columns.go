package ui

import (
	"slices"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
)

type colID int

const (
	colAccount colID = iota
	colSession
	colHolder
	colRun
	colFence
	colTTL
	colHeld
	colRenewed
	colQueue   // shown only while some session has a queue (ui/queue.go)
	colSlot    // shown only while some lease holds a limit's slot (ui/limits.go)
	colInbox   // shown only while some session has live messages (ui/inbox.go)
	colAsk     // shown only while some session on screen has a pending ask (ui/asks.go)
	colContext // shown in a monitor of several databases (Config.Contexts): first, never hidden
	numCols
)

// colSpec describes a column: its title, minimum and wanted widths, whether
// it is sized to its content (flex), alignment, when it is hidden on a
// narrow terminal (higher hide goes first; 0 never), and whether its cells
// change with the time as well as with the lease (timed: the row cache
// draws those again when the countdowns read otherwise).
//
// On a narrow terminal the ages go first (renewed, held), then who waits
// (queue, ask), then the holder, the run and last the fence: a run id and
// its fence say which run holds a session, the fence what a fenced write
// must carry. The ages also go where that shows the labels (holder, ask)
// whole that would be cut with them (spareHide).

type colSpec struct {
	id        colID
	title     string
	min, want int
	flex      bool
	right     bool
	hide      int
	timed     bool
}

// maxFlex caps a content-sized column (account, session), so one very long
// value does not take the whole table; the holder, whose labels are the
// longest, is capped only by the terminal.
const maxFlex = 40

func colSpecs() []colSpec {
	return []colSpec{
		{colContext, "CONTEXT", 7, 0, true, false, 0, false},
		{colAccount, "ACCOUNT", 7, 0, true, false, 0, false},
		{colSession, "SESSION", 7, 0, true, false, 0, false},
		{colHolder, "HOLDER", 6, 0, true, false, 4, false},
		{colRun, "RUN", 8, 8, false, false, 3, false},
		{colFence, "FENCE", 5, 6, false, true, 2, false},
		{colTTL, "TTL", 7, 15, false, false, 0, true},
		{colHeld, "HELD", 6, 6, false, true, 7, true},
		{colRenewed, "RENEWED", 7, 7, false, true, 8, true},
		{colSlot, "SLOT", 4, 0, true, false, 6, false},
		{colQueue, "QUEUE", 5, 5, false, true, 6, false},
		{colInbox, "INBOX", 5, 7, false, true, 6, false},
		{colAsk, "ASK", 5, 0, true, false, 5, false},
	}
}

// spareHide: the columns whose hide is at least it (the ages) are hidden,
// the highest first, while a label (holder, ask) is cut shorter than it is,
// up to spareLabel cells: a label longer than that is cut rather than take
// the ages' room.
const (
	spareHide  = 7
	spareLabel = 20
)

// maxAsk caps the ASK column: an asker's label past it is cut with "…".
const maxAsk = 24

// column is a laid-out column.
type column struct {
	colSpec
	width int
}

// colWidths is every column's width (0: hidden), to key what was drawn in
// them.
type colWidths [numCols]int16

func widthsOf(cols []column) colWidths {
	var w colWidths
	for _, c := range cols {
		w[c.id] = int16(c.width)
	}
	return w
}

// contentWidths is the widest account, session and holder among rows, in
// terminal cells as the table shows them.
func contentWidths(rows []*data.Lease) colWidths {
	var w colWidths
	for _, l := range rows {
		w[colContext] = max(w[colContext], cellWidth(l.Context))
		w[colAccount] = max(w[colAccount], cellWidth(l.Account))
		w[colSession] = max(w[colSession], cellWidth(l.Session))
		w[colHolder] = max(w[colHolder], cellWidth(l.Holder))
	}
	return w
}

// cellWidth is how many cells untrusted text takes once cleaned; printable
// ASCII, the usual case, is measured without cleaning it.
func cellWidth(s string) int16 {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return int16(min(ansi.StringWidth(clean(s, 0)), 1<<14))
		}
	}
	return int16(min(len(s), 1<<14))
}

// tableColumns fits the columns into width cells (after the two-cell cursor
// marker), for values content cells wide: hide columns until the minimums
// fit, grow the fixed ones to their wanted width, grow account, session and
// holder to their widest value shown (account and session at most maxFlex).
// What is left stays blank at the right: a column wider than anything in it
// only pushes the run, fence and countdown away from the names they belong
// to.
func tableColumns(width int, content colWidths) []column {
	specs := colSpecs()
	if content[colContext] == 0 { // one database: no column
		specs = slices.DeleteFunc(specs, func(s colSpec) bool { return s.id == colContext })
	}
	if content[colQueue] == 0 { // no session has a queue: no column
		specs = slices.DeleteFunc(specs, func(s colSpec) bool { return s.id == colQueue })
	}
	if content[colSlot] == 0 { // no lease holds a slot: no column
		specs = slices.DeleteFunc(specs, func(s colSpec) bool { return s.id == colSlot })
	}
	if content[colInbox] == 0 { // no session has live messages: no column
		specs = slices.DeleteFunc(specs, func(s colSpec) bool { return s.id == colInbox })
	}
	if content[colAsk] == 0 { // no session on screen has a pending ask: no column
		specs = slices.DeleteFunc(specs, func(s colSpec) bool { return s.id == colAsk })
	}
	for {
		cols := fitColumns(width, content, specs)
		i := sparable(cols)
		if i < 0 || !cutsLabel(cols, content) {
			return cols
		}
		specs = slices.DeleteFunc(specs, func(s colSpec) bool { return s.id == cols[i].id })
	}
}

// sparable is the next column to hide to show the labels whole (the
// highest hide at or above spareHide), -1 for none.
func sparable(cols []column) int {
	worst := -1
	for i, c := range cols {
		if c.hide >= spareHide && (worst < 0 || c.hide > cols[worst].hide) {
			worst = i
		}
	}
	return worst
}

// cutsLabel reports whether the holder or the ask is shown narrower than
// its widest value on screen, up to spareLabel cells.
func cutsLabel(cols []column, content colWidths) bool {
	for _, c := range cols {
		if (c.id == colHolder || c.id == colAsk) && c.width < min(int(content[c.id]), spareLabel) {
			return true
		}
	}
	return false
}

// fitColumns lays specs out in width cells (see tableColumns).
func fitColumns(width int, content colWidths, specs []colSpec) []column {
	avail := width - 2
	specs = slices.Clone(specs)
	need := func() int {
		n := len(specs) - 1
		for _, s := range specs {
			n += s.min
		}
		return n
	}
	for need() > avail {
		worst := -1
		for i, s := range specs {
			if s.hide > 0 && (worst < 0 || s.hide > specs[worst].hide) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		specs = append(specs[:worst], specs[worst+1:]...)
	}
	cols := make([]column, len(specs))
	extra := avail - need()
	for i, s := range specs {
		cols[i] = column{colSpec: s, width: s.min}
	}
	grow := func(limit func(c column) int) {
		for extra > 0 {
			grew := false
			for i := range cols {
				if extra > 0 && cols[i].width < limit(cols[i]) {
					cols[i].width++
					extra--
					grew = true
				}
			}
			if !grew {
				return
			}
		}
	}
	// The fixed columns to their wanted widths, but for the TTL's bar; the
	// texts to what they need, up to spareLabel; then the bar; then the
	// texts to their widest.
	grow(func(c column) int {
		if c.flex || c.id == colTTL {
			return c.min
		}
		return c.want
	})
	flexTo := func(c column) int {
		switch {
		case !c.flex:
			return 0
		case c.id == colHolder:
			return int(content[c.id])
		case c.id == colAsk:
			return min(int(content[c.id]), maxAsk)
		}
		return min(int(content[c.id]), maxFlex)
	}
	grow(func(c column) int { return min(flexTo(c), spareLabel) })
	grow(func(c column) int {
		if c.id == colTTL {
			return c.want
		}
		return 0
	})
	grow(flexTo)
	return cols
}
