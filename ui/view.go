package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// View renders the screen: exactly height lines, none wider than width.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = m.cfg.Title // never untrusted text
	return v
}

func (m *Model) render() string {
	lay := m.layout()
	if lay.tooSmall {
		w := max(m.width, 1)
		return fit("terminal too small", w) + "\n" + fit(fmt.Sprintf("%dx%d, need %dx%d", m.width, m.height, minWidth, minHeight), w)
	}
	var lines []string
	switch m.mode {
	case modeHelp:
		lines = m.viewHelp()
	case modeDetail:
		lines = m.viewDetail()
	case modeDevice:
		lines = m.viewDevice()
	case modeTimeline:
		lines = m.viewTimeline()
	case modeAccounts:
		lines = m.viewAccounts()
	default:
		lines = m.viewMain(lay)
	}
	out := strings.Join(m.frame(lines), "\n")
	if m.dialog != nil {
		out = overlay(out, m.viewDialog(), m.width, m.height)
	}
	return out
}

// viewMain is the header, the sessions table, the events pane and the
// status line.
func (m *Model) viewMain(lay layout) []string {
	lines := m.viewHeader(lay)
	lines = append(lines, m.viewTable(lay)...)
	if lay.showDevices {
		lines = append(lines, m.viewDevices(lay)...)
	}
	if lay.showEvents {
		lines = append(lines, m.viewEvents(lay)...)
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	return append(lines, m.viewStatus())
}

// frame makes lines exactly the screen's height and width. A line the
// previous frame had at the same place is not measured again.
func (m *Model) frame(lines []string) []string {
	if len(lines) > m.height {
		lines = lines[:m.height]
	}
	for len(lines) < m.height {
		lines = append(lines, "")
	}
	c := &m.cache
	if c.fitW != m.width || len(c.fitIn) != len(lines) {
		c.fitW, c.fitIn, c.fitOut = m.width, make([]string, len(lines)), make([]string, len(lines))
	}
	for i, l := range lines {
		if l != c.fitIn[i] { // fit("") is "": the fresh memo is right for empty lines
			c.fitIn[i], c.fitOut[i] = l, fit(l, m.width)
		}
		lines[i] = c.fitOut[i]
	}
	return lines
}

// viewStatus is the bottom line: the filter field while filtering, else the
// latest status message, else key hints.
func (m *Model) viewStatus() string {
	switch {
	case m.filtering:
		return m.filterIn.View()
	case m.status != "":
		st := m.styles.dim
		switch m.statusKind {
		case statusOK:
			st = m.styles.ok
		case statusWarn:
			st = m.styles.warn
		case statusError:
			st = m.styles.bad
		}
		return st.Render(m.status)
	}
	return m.hints()
}

// hints lists the main keys that are enabled. They are rendered once: the
// bindings do not change after New, and the styles reset the cache.
func (m *Model) hints() string {
	if m.cache.hints == "" {
		m.cache.hints = m.renderHints()
	}
	return m.cache.hints
}

func (m *Model) renderHints() string {
	k := &m.keys
	items := []struct {
		b    key.Binding
		desc string
	}{
		{k.Help, "help"}, {k.Filter, "filter"}, {k.Sort, "sort"}, {k.Pause, "pause"},
		{k.Detail, "details"}, {k.Devices, "devices"}, {k.Release, "release"}, {k.Quit, "quit"},
	}
	var parts []string
	for _, it := range items {
		if it.b.Enabled() && len(it.b.Keys()) > 0 {
			parts = append(parts, m.styles.key.Render(it.b.Keys()[0])+" "+m.styles.dim.Render(it.desc))
		}
	}
	for _, a := range m.actions {
		if a.Binding.Enabled() {
			parts = append(parts, m.styles.key.Render(a.Binding.Help().Key)+" "+m.styles.dim.Render(a.Binding.Help().Desc))
		}
	}
	return strings.Join(parts, "  ")
}

// overlay draws box centred over base.
func overlay(base, box string, width, height int) string {
	lines := strings.Split(base, "\n")
	boxLines := strings.Split(box, "\n")
	bw := 0
	for _, l := range boxLines {
		bw = max(bw, ansi.StringWidth(l))
	}
	x := max((width-bw)/2, 0)
	y := max((height-len(boxLines))/2, 0)
	for i, bl := range boxLines {
		if y+i >= len(lines) {
			break
		}
		line := lines[y+i]
		left := ansi.Truncate(line, x, "")
		left += strings.Repeat(" ", x-ansi.StringWidth(left))
		right := ansi.TruncateLeft(line, x+bw, "")
		if ansi.StringWidth(line) <= x+bw {
			right = ""
		}
		lines[y+i] = left + "\x1b[m" + pad(bl, bw) + "\x1b[m" + right
	}
	return strings.Join(lines, "\n")
}
