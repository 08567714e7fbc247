package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"

	"github.com/leasetop/leasetop/keymap"
)

// viewHelp lists every key, generated from the key map: disabled keys are
// listed as unavailable, with the reason. Help that does not fit the screen
// goes into two columns when the terminal is wide enough, and otherwise
// scrolls under its title.
func (m *Model) viewHelp() []string {
	title, body := m.helpLines()
	if 1+len(body) <= m.height {
		return append([]string{title}, body...)
	}
	if cols, ok := m.twoColumns(append([]string{title}, body...)); ok {
		return cols
	}
	page := m.helpPage()
	off := min(m.helpOff, len(body)-page)
	k := &m.keys
	var scroll []string
	for _, b := range []key.Binding{k.Down, k.Up, k.PageDown, k.PageUp} {
		if b.Enabled() {
			scroll = append(scroll, b.Help().Key)
		}
	}
	more := m.styles.warn.Render(fmt.Sprintf("lines %d-%d of %d", off+1, off+page, len(body)))
	if len(scroll) > 0 {
		more += m.styles.dim.Render(" · " + strings.Join(scroll, " ") + " scroll")
	}
	return append(append([]string{title}, body[off:off+page]...), more)
}

// helpPage is how many lines of the help's body a scrolling help shows: the
// screen less the title and the line that says where it is.
func (m *Model) helpPage() int { return max(m.height-2, 1) }

// helpLines returns the help's title and its body, one key a line.
func (m *Model) helpLines() (string, []string) {
	s := m.styles
	title := s.title.Render(clean(m.cfg.Title, 20)+" keys") + s.dim.Render("   ("+m.keys.Help.Help().Key+" or "+m.keys.Back.Help().Key+" closes)")
	var lines []string
	var omit []*key.Binding
	if !m.hasDevices() {
		omit = append(omit, &m.keys.Devices)
	}
	groups := m.keys.Groups(omit...)
	for i := range groups {
		if groups[i].Title == "Confirmation dialog" {
			groups[i].Bindings = append(groups[i].Bindings,
				key.NewBinding(key.WithKeys(m.keys.Focus.Keys()...), key.WithHelp(m.keys.Focus.Help().Key, "edit the reason (enter or tab to finish)")))
		}
	}
	if len(m.actions) > 0 {
		g := keymap.Group{Title: "More"}
		for _, a := range m.actions {
			g.Bindings = append(g.Bindings, a.Binding)
		}
		groups = append(groups, g)
	}
	keyW := 10
	for _, g := range groups {
		for _, b := range g.Bindings {
			keyW = max(keyW, len([]rune(b.Help().Key))+2)
		}
	}
	for _, g := range groups {
		lines = append(lines, "", s.bold.Render(g.Title))
		for _, b := range g.Bindings {
			k, desc := pad(b.Help().Key, keyW), b.Help().Desc
			switch {
			case !b.Enabled() && len(b.Keys()) > 0:
				lines = append(lines, "  "+s.dim.Render(k+desc)+"  "+s.warn.Render("unavailable: read-only"))
			case !b.Enabled(): // unbound: its key column says so (keymap.Load)
				lines = append(lines, "  "+s.dim.Render(k+desc))
			default:
				lines = append(lines, "  "+s.key.Render(k)+desc)
			}
		}
	}
	return title, lines
}

// twoColumns splits lines that do not fit the height into two columns, and
// reports false when the terminal is too narrow or too low for that.
func (m *Model) twoColumns(lines []string) ([]string, bool) {
	colW := 0
	for _, l := range lines {
		colW = max(colW, len([]rune(l)))
	}
	colW = min(colW, 64) + 2
	half := (len(lines) + 1) / 2
	if m.width >= 2*colW && half <= m.height {
		out := make([]string, half)
		for i := range half {
			out[i] = pad(fit(lines[i], colW-2), colW)
			if half+i < len(lines) {
				out[i] += lines[half+i]
			}
		}
		return out, true
	}
	return nil, false
}
