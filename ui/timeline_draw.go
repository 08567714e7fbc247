package ui

import (
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/monitor"
)

// window is the stretch of time the lanes show: cells columns of cell
// each, from from to from+cells*cell.
type window struct {
	from  time.Time
	cell  time.Duration
	cells int
}

func (w window) until() time.Time { return w.from.Add(time.Duration(w.cells) * w.cell) }

// col is the column of t: negative before the window, cells or more after.
func (w window) col(t time.Time) int {
	d := t.Sub(w.from)
	if d < 0 {
		return int((d - w.cell + 1) / w.cell)
	}
	return int(d / w.cell)
}

// cellStart is when column c starts.
func (w window) cellStart(c int) time.Time { return w.from.Add(time.Duration(c) * w.cell) }

// laneCell is one column of a drawn lane.
type laneCell struct {
	span int              // index in the lane's spans, -1 for none
	mark monitor.MarkKind // the strongest mark in the column
}

// drawLane draws ln over w: a bar in each holder's colour with its label
// where it fits, ░ where a lease sat expired, ─ where nobody held it, blank
// before the history kept (saying where it starts), and the marks over all.
// The result is exactly w.cells cells wide.
func drawLane(ln *monitor.Lane, w window, st *timelineStyles) drawnBar {
	cells := make([]laneCell, w.cells)
	for i := range cells {
		cells[i].span = -1
	}
	weak := func(i int) bool {
		return i < 0 || ln.Spans[i].Kind == monitor.SpanNobody || ln.Spans[i].Kind == monitor.SpanUnknown
	}
	for i, s := range ln.Spans {
		c0, c1 := max(w.col(s.From), 0), min(w.col(s.To.Add(-1)), w.cells-1)
		for c := c0; c <= c1; c++ {
			// A held or expired stretch shorter than a column still shows;
			// otherwise the later state wins the column.
			if s.Kind == monitor.SpanHeld || s.Kind == monitor.SpanExpired || weak(cells[c].span) {
				cells[c].span = i
			}
		}
	}
	for _, mk := range ln.Marks {
		if c := w.col(mk.At); c >= 0 && c < w.cells && mk.Kind > cells[c].mark {
			cells[c].mark = mk.Kind
		}
	}
	pieces := make([]piece, 0, 16)
	add := func(text string, style *sgr, n int) {
		if k := len(pieces) - 1; k >= 0 && pieces[k].style == style {
			pieces[k].text += text
			pieces[k].cells += n
			return
		}
		pieces = append(pieces, piece{text, style, n})
	}
	for c := 0; c < w.cells; {
		if mk := cells[c].mark; mk != monitor.MarkNone {
			add(markGlyphs[mk], &st.markSGR[mk], 1)
			c++
			continue
		}
		// A run of columns of one span with no mark.
		end := c + 1
		for end < w.cells && cells[end].span == cells[c].span && cells[end].mark == monitor.MarkNone {
			end++
		}
		n := end - c
		if cells[c].span < 0 {
			add(strings.Repeat(" ", n), nil, n)
			c = end
			continue
		}
		s := ln.Spans[cells[c].span]
		switch s.Kind {
		case monitor.SpanHeld:
			colour := holderColour(holderLabel(s), len(st.holders))
			bar := &st.holderSGR[colour]
			label := ""
			if n >= 4 {
				label = idText(holderLabel(s), n-2)
				if s.Holder == "" && ansi.StringWidth(holderLabel(s)) > n-2 {
					label = clean(shortRun(s.Run), n-2) // no label: the run's id, without "run "
				}
			}
			if lw := ansi.StringWidth(label); lw > 0 {
				add("█", bar, 1)
				add(label, &st.labelSGR[colour], lw)
				add(strings.Repeat("█", n-1-lw), bar, n-1-lw)
			} else {
				add(strings.Repeat("█", n), bar, n)
			}
		case monitor.SpanExpired:
			add(strings.Repeat("░", n), &st.expiredSGR, n)
		case monitor.SpanNobody:
			add(strings.Repeat("─", n), &st.emptySGR, n)
		default:
			add(unknownText(ln, w, c, n), nil, n)
		}
		c = end
	}
	return joinPieces(pieces, w.cells)
}

// piece is a stretch of a drawn line in one style.
type piece struct {
	text  string
	style *sgr
	cells int
}

// withCursor draws the cursor over column c of a lane's drawn bar: a │ in
// reverse video through every lane (a mark in that column stays), so the
// cursor reads without colour too. Only that column changes: the bars
// themselves are drawn once per window, not per scrub step.
func withCursor(bar drawnBar, ln *monitor.Lane, w window, c int, st *timelineStyles) string {
	if c < 0 || c >= w.cells {
		return bar.text
	}
	return bar.cut(c, st.cursorSGR.wrap(cursorGlyph(ln, w, c)))
}

// cursorGlyph is what the cursor shows in column c: the strongest mark
// there, else │.
func cursorGlyph(ln *monitor.Lane, w window, c int) string {
	mk := monitor.MarkNone
	for _, x := range ln.Marks {
		if w.col(x.At) == c && x.Kind > mk {
			mk = x.Kind
		}
	}
	if mk != monitor.MarkNone {
		return markGlyphs[mk]
	}
	return "│"
}

// unknownText fills n columns from column c of a stretch before the history
// kept: blank, and where the known history starts, if it starts right
// after, a ┊ and the time, when they fit. After where the read stopped at
// its cap, it says so and how to read less.
func unknownText(ln *monitor.Lane, w window, c, n int) string {
	if !ln.Cut.IsZero() && w.col(ln.Cut) <= c {
		for _, text := range []string{
			"┊ not read: too many events for one read, zoom in (+)",
			"┊ not read: zoom in (+)",
			"┊ not read",
			"┊",
		} {
			if tw := ansi.StringWidth(text); tw <= n {
				return text + strings.Repeat(" ", n-tw)
			}
		}
		return strings.Repeat(" ", n)
	}
	if ln.Known.IsZero() || w.col(ln.Known) != c+n {
		return strings.Repeat(" ", n)
	}
	for _, text := range []string{
		"history kept from " + ln.Known.Format("15:04:05") + " ┊",
		"kept from " + ln.Known.Format("15:04:05") + " ┊",
		"kept " + ln.Known.Format("15:04:05") + "┊",
		"┊",
	} {
		if tw := ansi.StringWidth(text); tw <= n {
			return strings.Repeat(" ", n-tw) + text
		}
	}
	return strings.Repeat(" ", n)
}

// holderLabel is what a span's bar is labelled with: the holder, or the
// run when the holder gave no label.
func holderLabel(s monitor.Span) string {
	if s.Holder != "" {
		return s.Holder
	}
	return "run " + shortRun(s.Run)
}

// sparkLevels are a sparkline's glyphs, from nothing to the most.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// sparkline draws counts, one glyph each, scaled to their largest: ▁ is
// none, and any count above none is at least ▂.
func sparkline(counts []int) string {
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	out := make([]rune, len(counts))
	for i, n := range counts {
		lvl := 0
		if n > 0 {
			lvl = 1 + (n*(len(sparkLevels)-2)+top-1)/top
		}
		out[i] = sparkLevels[min(lvl, len(sparkLevels)-1)]
	}
	return string(out)
}

// tickSteps are the axis's tick intervals, the first that leaves room for
// the times is used.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour,
}

// drawAxis is the time scale over the lanes: a ╵ and the time at each tick
// ("15:04:05"; "15:04" for whole minutes), and ▼ over the cursor column.
func drawAxis(w window, cursor int, loc *time.Location) string {
	layout := "15:04:05"
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		lw := 9
		if s >= time.Minute {
			lw = 6
		}
		if int(s/w.cell) >= lw+2 {
			step = s
			break
		}
	}
	if step >= time.Minute {
		layout = "15:04"
	}
	line := []rune(strings.Repeat(" ", w.cells))
	first := w.from.In(loc).Truncate(step)
	if first.Before(w.from) {
		first = first.Add(step)
	}
	for t := first; t.Before(w.until()); t = t.Add(step) {
		c := w.col(t)
		text := []rune("╵" + t.In(loc).Format(layout))
		if c+len(text) > w.cells {
			if c < w.cells {
				line[c] = '╵'
			}
			continue
		}
		copy(line[c:], text)
	}
	if cursor >= 0 && cursor < w.cells {
		line[cursor] = '▼'
	}
	return string(line)
}
