package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// helpKey scrolls the help or closes it; quit still quits.
func (m *Model) helpKey(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.keys
	_, body := m.helpLines()
	last := max(len(body)-m.helpPage(), 0)
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help, k.Back):
		m.mode = m.helpFrom
	case key.Matches(msg, k.Up):
		m.helpOff--
	case key.Matches(msg, k.Down):
		m.helpOff++
	case key.Matches(msg, k.PageUp):
		m.helpOff -= m.helpPage()
	case key.Matches(msg, k.PageDown):
		m.helpOff += m.helpPage()
	case key.Matches(msg, k.Top):
		m.helpOff = 0
	case key.Matches(msg, k.Bottom):
		m.helpOff = last
	}
	m.helpOff = min(max(m.helpOff, 0), last)
	return nil
}

// openHelp shows the help from its top; closing it goes back to the
// screen it was opened from.
func (m *Model) openHelp() { m.helpFrom, m.mode, m.helpOff = m.mode, modeHelp, 0 }
