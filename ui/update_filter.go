package ui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// startFilter opens the filter field with the current filter.
func (m *Model) startFilter() tea.Cmd {
	m.filtering = true
	m.filterIn.SetValue(m.filter)
	m.filterIn.CursorEnd()
	return m.filterIn.Focus()
}

// filterKey edits the filter; rows update as the user types. Enter keeps
// the filter, esc clears it.
func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case m.typingQuit(msg):
		return tea.Quit
	case key.Matches(msg, m.keys.Back):
		had := m.filter
		m.clearFilter()
		if had != "" {
			return m.timelineFiltered()
		}
		return nil
	case msg.String() == "enter":
		m.filtering = false
		m.filterIn.Blur()
		return nil
	}
	var cmd tea.Cmd
	m.filterIn, cmd = m.filterIn.Update(msg)
	if f := strings.TrimSpace(m.filterIn.Value()); f != m.filter {
		m.setFilter(f)
		cmd = tea.Batch(cmd, m.timelineFiltered()) // the lanes of the filter, in the timeline
	}
	return cmd
}

func (m *Model) clearFilter() {
	m.filtering = false
	m.filterIn.Blur()
	m.filterIn.SetValue("")
	if m.filter != "" {
		m.setFilter("")
	}
}
