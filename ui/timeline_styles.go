package ui

import (
	"hash/fnv"
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/theme"
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

func newTimelineStyles(th theme.Theme, s styles) timelineStyles {
	var t timelineStyles
	holders := th.Holders
	if len(holders) == 0 { // a theme built without them: one colour for every holder
		holders = []color.Color{th.Accent}
	}
	for _, c := range holders {
		t.holders = append(t.holders, lipgloss.NewStyle().Foreground(c))
		t.labels = append(t.labels, lipgloss.NewStyle().Background(c).Foreground(th.HolderText).Bold(true))
	}
	t.expired = s.barRed
	t.empty = s.barEmpty
	t.cursor = lipgloss.NewStyle().Reverse(true)
	t.marks[monitor.MarkOther] = s.dim
	t.marks[monitor.MarkMessage] = s.dim
	t.marks[monitor.MarkRefused] = s.warn
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
