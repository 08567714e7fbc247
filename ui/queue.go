package ui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The sessions' queues: the table's QUEUE column, shown only
// while some session has a queue, and the detail view's list of tickets.
// Queue lengths change without an event when a ticket expires, so they are
// read, every queuePollEvery, not followed.

// queuePollEvery is how often the queue lengths are read.
const queuePollEvery = 2 * time.Second

type (
	// queuesMsg is every session's queue length.
	queuesMsg struct {
		lengths map[monitor.Key]int
		err     error
	}
	// queueMsg is one session's tickets for the detail view.
	queueMsg struct {
		key     monitor.Key
		tickets []data.Ticket
		err     error
	}
)

// queuePoll is the last read of the queue lengths.
type queuePoll struct {
	lengths map[monitor.Key]int
	readAt  time.Time
	reading bool
}

func (q *queuePoll) any() bool                { return len(q.lengths) > 0 }
func (q *queuePoll) length(k monitor.Key) int { return q.lengths[k] }

// pollQueues reads the queue lengths if the last read is older than
// queuePollEvery and none is in flight.
func (m *Model) pollQueues() tea.Cmd {
	read := m.cfg.Source.QueuesFunc
	if read == nil || m.queues.reading || m.now.Sub(m.queues.readAt) < queuePollEvery {
		return nil
	}
	m.queues.reading = true
	return func() tea.Msg {
		n, err := read()
		return queuesMsg{lengths: n, err: err}
	}
}

func (m *Model) onQueues(msg queuesMsg) {
	m.queues.reading, m.queues.readAt = false, m.cfg.Now()
	if msg.err == nil { // a failed read keeps the last lengths; the feed reports the connection
		m.queues.lengths = msg.lengths
	}
}

// loadQueue reads key's tickets for the detail view.
func (m *Model) loadQueue(key monitor.Key) tea.Cmd {
	read := m.cfg.Source.QueueFunc
	if read == nil {
		return nil
	}
	return func() tea.Msg {
		q, err := read(key)
		return queueMsg{key: key, tickets: q, err: err}
	}
}

func (m *Model) onQueue(msg queueMsg) {
	if m.detail == nil || m.detail.key != msg.key {
		return
	}
	m.detail.queue, m.detail.qErr = msg.tickets, msg.err
}

// queueLines appends the detail view's queue: each ticket in order, with
// its label, public run id, how long it has waited and when it expires
// unless renewed. Nothing when the session has no queue.
func (m *Model) queueLines(lines []string, serverNow time.Time) []string {
	s, d := m.styles, m.detail
	if d.qErr != nil {
		return append(lines, "", "  "+s.dim.Render("queue: cannot read: "+clean(oneLine(d.qErr.Error()), 0)))
	}
	if len(d.queue) == 0 {
		return lines
	}
	lines = append(lines, "", s.title.Render("Queue")+s.dim.Render(fmt.Sprintf("  %d waiting, granted in this order", len(d.queue))))
	for i, t := range d.queue {
		label := clean(t.Holder, 40)
		if label == "" {
			label = s.dim.Render("(no label)")
		}
		lines = append(lines, fmt.Sprintf("  %2d. %s  %s  %s", i+1, label, shortRun(t.RunID),
			s.dim.Render("waiting "+compact(serverNow.Sub(t.JoinedAt))+", ticket expires in "+compact(t.ExpiresAt.Sub(serverNow)))))
	}
	return lines
}
