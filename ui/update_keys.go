package ui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// onKey routes a key press to the handler of the current mode.
func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case m.dialog != nil:
		return m.dialogKey(msg)
	case m.filtering:
		return m.filterKey(msg)
	case m.mode == modeHelp:
		return m.helpKey(msg)
	case m.mode == modeDetail:
		return m.detailKey(msg)
	case m.mode == modeDevice:
		return m.deviceKey(msg)
	case m.mode == modeTimeline:
		return m.timelineKey(msg)
	case m.mode == modeAccounts:
		return m.accountsKey(msg)
	}
	return m.mainKey(msg)
}

// mainKey handles the main screen's keys.
func (m *Model) mainKey(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.openHelp()
	case key.Matches(msg, k.Filter):
		return m.startFilter()
	case key.Matches(msg, k.Back):
		m.clearFilter()
	case key.Matches(msg, k.Sort):
		m.sortBy = (m.sortBy + 1) % m.sortModes()
		m.holdUntil = time.Time{} // an explicit re-sort
		m.refreshRows()
		m.setStatus(statusInfo, "sorted by "+m.sortBy.String())
	case key.Matches(msg, k.Pause):
		m.togglePause()
	case key.Matches(msg, k.Focus):
		m.nextFocus()
	case key.Matches(msg, k.Devices):
		m.toggleDevices()
	case key.Matches(msg, k.Detail) && m.focus == focusDevices:
		return m.openDevice()
	case key.Matches(msg, k.Detail):
		return m.openDetail()
	case key.Matches(msg, k.Timeline):
		return m.openTimeline()
	case key.Matches(msg, k.Accounts):
		return m.openAccounts()
	case key.Matches(msg, k.Resync):
		return m.requestResync()
	case key.Matches(msg, k.Release):
		return m.openDialog()
	case key.Matches(msg, k.ClearQueue):
		return m.openClearDialog()
	case m.navigate(msg):
		m.holdOrder()
	default:
		return m.otherKey(msg)
	}
	return nil
}

// navigate moves the focused list's cursor; it reports whether msg was a
// navigation key.
func (m *Model) navigate(msg tea.KeyPressMsg) bool {
	k := &m.keys
	page := m.layout().tableRows
	move := m.moveTable
	switch m.focus {
	case focusEvents:
		page, move = m.layout().eventRows, m.moveEvents
	case focusDevices:
		page, move = m.layout().deviceRows, m.moveDevices
	}
	page = max(page, 1)
	switch {
	case key.Matches(msg, k.Up):
		move(-1)
	case key.Matches(msg, k.Down):
		move(1)
	case key.Matches(msg, k.PageUp):
		move(-page)
	case key.Matches(msg, k.PageDown):
		move(page)
	case key.Matches(msg, k.Top):
		move(-1 << 30)
	case key.Matches(msg, k.Bottom):
		move(1 << 30)
	default:
		return false
	}
	return true
}

// otherKey runs an extra action, or explains a disabled key.
func (m *Model) otherKey(msg tea.KeyPressMsg) tea.Cmd {
	for _, a := range m.actions {
		if key.Matches(msg, a.Binding) && a.RunFunc != nil {
			sel, ok := m.selected()
			return runAction(a, sel, ok)
		}
	}
	if b, ok := m.keys.Disabled(msg.String()); ok {
		m.refuse(msg.String(), b.Help().Desc)
		return nil
	}
	for _, a := range m.actions {
		if !a.Binding.Enabled() && containsKey(a.Binding.Keys(), msg.String()) {
			m.refuse(msg.String(), a.Binding.Help().Desc)
		}
	}
	return nil
}

func containsKey(keys []string, k string) bool {
	for _, s := range keys {
		if s == k {
			return true
		}
	}
	return false
}

func (m *Model) togglePause() {
	if m.frozen != nil {
		m.frozen, m.dev.frozen = nil, nil
		m.refreshRows()
		m.reselectDevice()
		m.setStatus(statusInfo, "resumed")
		return
	}
	m.frozen, m.frozenAt, m.dev.frozen = m.state.Clone(), m.now, m.dev.list
	m.setStatus(statusInfo, "paused: the screen is frozen, events are still collected")
}

func (m *Model) requestResync() tea.Cmd {
	if m.cfg.Source.ResyncFunc == nil {
		return nil
	}
	m.cfg.Source.ResyncFunc()
	m.resyncing = true
	m.setStatus(statusInfo, "resyncing…")
	return nil
}

// typingQuit reports whether msg quits while a text field has focus: only
// quit keys that do not type a character (ctrl+c, not q).
func (m *Model) typingQuit(msg tea.KeyPressMsg) bool {
	return key.Matches(msg, m.keys.Quit) && msg.Text == "" && strings.Contains(msg.String(), "+")
}

// refuse says why a disabled key did nothing.
func (m *Model) refuse(keystroke, desc string) {
	desc, _, _ = strings.Cut(desc, " (")
	m.setStatus(statusWarn, "read-only mode: "+keystroke+" ("+desc+") is disabled")
}
