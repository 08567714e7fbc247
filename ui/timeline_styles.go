package ui

import (
	"hash/fnv"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/leasetop/leasetop/monitor"
)

// timelineStyles are the timeline's colours: one per holder (the same
// holder label always gets the same colour), and the lane's other states.
// Like every style here, each also shows as a glyph (█ held, ░ expired, ─
// nobody, marks in the legend), so the lanes read the same without colour.
type timelineStyles struct {
	holders        []lipgloss.Style // bar cells, by holderColour
	labels         []lipgloss.Style // a holder's label inside its bar
	expired, empty lipgloss.Style
	cursor         lipgloss.Style
	marks          [len(markGlyphs)]lipgloss.Style
	spark          lipgloss.Style

	// The same styles as the escape sequences that open and close them,
	// worked out once: a lane is tens of styled stretches, and rendering
	// each through lipgloss cost most of drawing the timeline.
	holderSGR, labelSGR  []sgr
	expiredSGR, emptySGR sgr
	markSGR              [len(markGlyphs)]sgr
	cursorSGR            sgr
}

// sgr is a style as the sequences around the text it styles.
type sgr struct{ on, off string }

// sgrOf works out st's sequences by rendering a placeholder: for styles of
// colours and attributes only (no padding, width or border).
func sgrOf(st lipgloss.Style) sgr {
	out := st.Render("X")
	i := strings.Index(out, "X")
	if i < 0 {
		return sgr{}
	}
	return sgr{on: out[:i], off: out[i+1:]}
}

// wrap styles text (already safe) with s.
func (s sgr) wrap(text string) string { return s.on + text + s.off }

func newTimelineStyles(isDark bool, s styles) timelineStyles {
	ld := lipgloss.LightDark(isDark)
	palette := [][2]string{
		{"#0969da", "#58a6ff"}, {"#1a7f37", "#3fb950"}, {"#8250df", "#bc8cff"}, {"#bf3989", "#f778ba"},
		{"#0e7490", "#39c5cf"}, {"#9a6700", "#d29922"}, {"#57606a", "#b1bac4"}, {"#953800", "#ffa657"},
	}
	var t timelineStyles
	for _, p := range palette {
		c := ld(lipgloss.Color(p[0]), lipgloss.Color(p[1]))
		t.holders = append(t.holders, lipgloss.NewStyle().Foreground(c))
		t.labels = append(t.labels, lipgloss.NewStyle().Background(c).Foreground(ld(lipgloss.Color("#ffffff"), lipgloss.Color("#0d1117"))).Bold(true))
	}
	t.expired = s.barRed
	t.empty = s.barEmpty
	t.cursor = lipgloss.NewStyle().Reverse(true)
	t.marks[monitor.MarkOther] = s.dim
	t.marks[monitor.MarkExpired] = s.bad
	t.marks[monitor.MarkHandover] = s.ok.Bold(true)
	t.marks[monitor.MarkPreempted] = s.warn
	t.marks[monitor.MarkTakeover] = s.warn
	t.marks[monitor.MarkZombie] = s.zombie
	t.marks[monitor.MarkForced] = s.forced
	t.spark = s.title
	for i := range t.holders {
		t.holderSGR = append(t.holderSGR, sgrOf(t.holders[i]))
		t.labelSGR = append(t.labelSGR, sgrOf(t.labels[i]))
	}
	t.expiredSGR, t.emptySGR = sgrOf(t.expired), sgrOf(t.empty)
	t.cursorSGR = sgrOf(t.cursor)
	for i := range t.marks {
		t.markSGR[i] = sgrOf(t.marks[i])
	}
	return t
}

// holderColour picks a holder's colour from its label, so that it keeps it
// from lane to lane and from one run of the monitor to the next.
func holderColour(label string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(label))
	return int(h.Sum32() % uint32(n))
}
