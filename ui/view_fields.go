package ui

import "github.com/charmbracelet/x/ansi"

// fieldLines returns a function that appends a field of a detail view to
// *lines: its name in a column of its own, its value (safe text) wrapped to
// the screen.
func (m *Model) fieldLines(lines *[]string) func(name, value string) {
	return func(name, value string) {
		wrapped := ansi.Wrap(value, max(m.width-15, 10), "")
		for i, part := range splitLines(wrapped) {
			label := ""
			if i == 0 {
				label = name
			}
			*lines = append(*lines, "  "+m.styles.dim.Render(pad(label, 11))+" "+part)
		}
	}
}

// listView is the list below a detail view's fields: a session's history,
// a device's attempts.
type listView struct {
	title, note string // "History", " newest first, from lease.event"
	loading     bool
	err         error
	what        string // what could not be read: "the history"
	empty       string // what an empty list says
	n, scroll   int
	line        func(i int) string
}

// appendList appends v to lines: its title, then that it is loading, its
// error, that it is empty, or its items from v.scroll on, as many as fit.
func (m *Model) appendList(lines []string, v listView) []string {
	s := m.styles
	lines = append(lines, "", s.bold.Render(v.title)+s.dim.Render(v.note))
	switch {
	case v.loading:
		lines = append(lines, "  "+s.dim.Render("loading…"))
	case v.err != nil:
		lines = append(lines, "  "+s.bad.Render("cannot read "+v.what+": "+clean(oneLine(v.err.Error()), 0)))
	case v.n == 0:
		lines = append(lines, "  "+s.dim.Render(v.empty))
	}
	room := max(m.height-len(lines), 1)
	for i := v.scroll; i < v.n && room > 0; i, room = i+1, room-1 {
		lines = append(lines, v.line(i))
	}
	return lines
}
