package ui

import (
	"slices"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/data"
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
	colQueue // shown only while some session has a queue (ui/queue.go)
	numCols
)

// colSpec describes a column: its title, minimum and wanted widths, whether
// it is sized to its content (flex), alignment, when it is hidden on a
// narrow terminal (higher hide goes first; 0 never), and whether its cells
// change with the time as well as with the lease (timed: the row cache
// draws those again when the countdowns read otherwise).
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
		{colAccount, "ACCOUNT", 7, 0, true, false, 0, false},
		{colSession, "SESSION", 7, 0, true, false, 0, false},
		{colHolder, "HOLDER", 6, 0, true, false, 1, false},
		{colRun, "RUN", 8, 8, false, false, 5, false},
		{colFence, "FENCE", 5, 6, false, true, 4, false},
		{colTTL, "TTL", 7, 15, false, false, 0, true},
		{colHeld, "HELD", 6, 6, false, true, 3, true},
		{colRenewed, "RENEWED", 7, 7, false, true, 2, true},
		{colQueue, "QUEUE", 5, 5, false, true, 6, false},
	}
}

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
	avail := width - 2
	specs := colSpecs()
	if content[colQueue] == 0 { // no session has a queue: no column
		specs = slices.DeleteFunc(specs, func(s colSpec) bool { return s.id == colQueue })
	}
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
	grow(func(c column) int {
		if c.flex {
			return 0
		}
		return c.want
	})
	grow(func(c column) int {
		switch {
		case !c.flex:
			return 0
		case c.id == colHolder:
			return int(content[c.id])
		}
		return min(int(content[c.id]), maxFlex)
	})
	return cols
}
