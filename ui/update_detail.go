package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// detailView is the open detail screen of one session.
type detailView struct {
	key     monitor.Key
	opened  data.Lease // the lease when the view opened (it may end meanwhile)
	held    bool
	history []data.Event
	err     error
	loading bool
	scroll  int
	lockers []data.Locker // transactions holding the lease row locked
	lockErr error
	queue   []data.Ticket // the session's queue, head first (ui/queue.go)
	qErr    error
}

// openDetail opens the selected session's details (from the events pane:
// the selected event's session) and loads its history.
func (m *Model) openDetail() tea.Cmd {
	var k monitor.Key
	if m.focus == focusEvents {
		ev, ok := m.selectedEvent()
		if !ok || ev.Kind == data.KindTruncated {
			return nil
		}
		k = monitor.EventKey(ev)
	} else {
		l, ok := m.selected()
		if !ok {
			return nil
		}
		k = monitor.KeyOf(l)
	}
	l, held := m.shown().LeaseOf(k)
	m.detail = &detailView{key: k, opened: l, held: held, loading: true}
	m.mode = modeDetail
	return tea.Batch(m.loadHistory(k), m.loadLockers(k), m.loadQueue(k))
}

// detailKey scrolls the history or closes the view.
func (m *Model) detailKey(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Back, k.Detail):
		m.mode, m.detail = modeMain, nil
	case key.Matches(msg, k.Up):
		m.detail.scroll = max(m.detail.scroll-1, 0)
	case key.Matches(msg, k.Down):
		m.detail.scroll = min(m.detail.scroll+1, max(len(m.detail.history)-1, 0))
	case key.Matches(msg, k.Top):
		m.detail.scroll = 0
	case key.Matches(msg, k.Release):
		if l, ok := m.shown().LeaseOf(m.detail.key); ok {
			m.mode, m.detail = modeMain, nil
			return m.openDialogFor(l)
		}
	case key.Matches(msg, k.ClearQueue):
		return m.openClearDialog()
	case key.Matches(msg, k.Help):
		m.detail = nil
		m.openHelp()
	default:
		return m.otherKey(msg)
	}
	return nil
}
