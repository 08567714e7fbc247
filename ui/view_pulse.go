package ui

import (
	"fmt"
	"time"
)

// pulseLine is the header's pulse: sparklines of the transitions, the
// takeovers and the rejected renewals over the last minutes, ten seconds a
// glyph, and their figures.
func (m *Model) pulseLine() string {
	s := m.styles
	st := m.shown()
	now := m.shownNow()
	cells := min(max((m.width-66)/3, 6), 30)
	p := st.Pulse(now, cells, 10*time.Second)
	over := zoomText(time.Duration(cells) * p.Step)
	spark := func(counts []int) string { return s.tl.spark.Render(sparkline(counts)) }
	segs := []segment{
		{s.dim.Render("pulse " + over), 1},
		{"transitions " + spark(p.Transitions) + fmt.Sprintf(" %.1f/s", st.EventsPerSecond(now)), 0},
		{"takeovers " + spark(p.Takeovers) + fmt.Sprintf(" %d", sum(p.Takeovers)), 0},
		{"zombies " + spark(p.Zombies) + fmt.Sprintf(" %d", sum(p.Zombies)), 0},
	}
	return joinSegments(segs, m.width)
}

// pulseMinWidth is the least width at which the main screen's counts line
// carries the pulse too (the timeline's header always does).
const pulseMinWidth = 130

// pulseSegment is the pulse for the main screen's counts line: the three
// sparklines over the last two minutes, once anything happened in them.
func (m *Model) pulseSegment() string {
	if m.width < pulseMinWidth {
		return ""
	}
	s := m.styles
	p := m.shown().Pulse(m.shownNow(), 12, 10*time.Second)
	if sum(p.Transitions)+sum(p.Zombies) == 0 {
		return ""
	}
	spark := func(counts []int) string { return s.tl.spark.Render(sparkline(counts)) }
	return s.dim.Render("pulse 2m ") + spark(p.Transitions) + s.dim.Render(" takeovers ") + spark(p.Takeovers) +
		s.dim.Render(" zombies ") + spark(p.Zombies)
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
