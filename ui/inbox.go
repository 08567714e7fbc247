package ui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The conversations' inboxes: the table's INBOX column, shown
// only while some held session has live messages (sent, neither
// acknowledged nor expired), gives how many and the oldest one's age; the
// detail view says how many no run received yet. A message expires without
// an event being written at once, so the inboxes are read, every
// queuePollEvery, not followed.

// inboxesMsg is every conversation's inbox, as read.
type inboxesMsg struct {
	inboxes map[monitor.Key]data.Inbox
	err     error
}

// inboxPoll is the last read of the inboxes.
type inboxPoll struct {
	inboxes map[monitor.Key]data.Inbox
	readAt  time.Time
	reading bool
}

func (p *inboxPoll) any() bool                   { return len(p.inboxes) > 0 }
func (p *inboxPoll) of(k monitor.Key) data.Inbox { return p.inboxes[k] }

// pollInboxes reads the inboxes if the last read is older than
// queuePollEvery and none is in flight.
func (m *Model) pollInboxes() tea.Cmd {
	read := m.cfg.Source.InboxesFunc
	if read == nil || m.inboxes.reading || m.now.Sub(m.inboxes.readAt) < queuePollEvery {
		return nil
	}
	m.inboxes.reading = true
	return func() tea.Msg {
		in, err := read()
		return inboxesMsg{inboxes: in, err: err}
	}
}

func (m *Model) onInboxes(msg inboxesMsg) {
	m.inboxes.reading, m.inboxes.readAt = false, m.cfg.Now()
	if msg.err == nil { // a failed read keeps the last inboxes; the feed reports the connection
		m.inboxes.inboxes = msg.inboxes
	}
}

// inboxText is the INBOX cell of a session with inbox in: how many live
// messages, and the oldest one's age when it was read ("3 12s").
func inboxText(in data.Inbox) string {
	if in.Live == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s", in.Live, compact(in.Oldest))
}

// inboxLines adds the detail view's inbox field: the live messages, how
// many no run received yet, and the oldest one's age. Nothing when the
// session has none.
func (m *Model) inboxLines(field func(name, value string), key monitor.Key) {
	in := m.inboxes.of(key)
	if in.Live == 0 {
		return
	}
	text := fmt.Sprintf("%d live, %d not received by a run yet", in.Live, in.Waiting)
	field("inbox", text+m.styles.dim.Render(fmt.Sprintf("  oldest sent %s ago (read %s ago)",
		compact(in.Oldest), compact(m.now.Sub(m.inboxes.readAt)))))
}
