package ui

import (
	"charm.land/bubbles/v2/key"

	"github.com/leasetop/leasetop/keymap"
)

// viewHelp lists every key, generated from the key map: disabled keys are
// listed as unavailable, with the reason.
func (m *Model) viewHelp() []string {
	s := m.styles
	lines := []string{
		s.title.Render(clean(m.cfg.Title, 20)+" keys") + s.dim.Render("   ("+m.keys.Help.Help().Key+" or "+m.keys.Back.Help().Key+" closes)"),
	}
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
			case !b.Enabled():
				lines = append(lines, "  "+s.dim.Render(k+desc+"  (unbound)"))
			default:
				lines = append(lines, "  "+s.key.Render(k)+desc)
			}
		}
	}
	return m.twoColumns(lines)
}

// twoColumns splits lines that do not fit the height into two columns when
// the terminal is wide enough, and otherwise cuts them with a note.
func (m *Model) twoColumns(lines []string) []string {
	if len(lines) <= m.height {
		return lines
	}
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
		return out
	}
	out := append([]string(nil), lines[:m.height-1]...)
	return append(out, m.styles.warn.Render("… enlarge the terminal to see every key"))
}
