package ui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Clearing a session's queue: keymap.Map.ClearQueue on
// the selected session opens a (y/N) dialog like the forced release's, and
// confirming clears every live ticket of its queue, recorded as queue_left
// with the login and the reason; each waiter stops waiting.

// queueClear is what a clear-queue dialog confirms: the session, and how
// many tickets its queue had when the dialog opened.
type queueClear struct {
	key     monitor.Key
	tickets int
}

type (
	// clearQueueReq is a confirmed clear of a session's queue.
	clearQueueReq struct {
		key    monitor.Key
		reason string
	}
	// queueClearedMsg is its outcome.
	queueClearedMsg struct {
		req     clearQueueReq
		cleared int
		err     error
	}
)

// openClearDialog asks to clear the queue of the selected session (from
// the events pane: the selected event's session; in the detail view, its
// session).
func (m *Model) openClearDialog() tea.Cmd {
	var (
		k  monitor.Key
		ok bool
	)
	switch {
	case m.mode == modeDetail && m.detail != nil:
		k, ok = m.detail.key, true
	case m.focus == focusEvents:
		var ev data.Event
		if ev, ok = m.selectedEvent(); ok {
			k, ok = monitor.EventKey(ev), ev.Kind != data.KindTruncated
		}
	default:
		var l data.Lease
		l, ok = m.selected()
		k = monitor.KeyOf(l)
	}
	if !ok {
		m.setStatus(statusWarn, "nothing to clear: select a session with a queue first")
		return nil
	}
	return m.openClearDialogFor(k)
}

func (m *Model) openClearDialogFor(k monitor.Key) tea.Cmd {
	if !m.keys.ClearQueue.Enabled() { // read-only: never reachable, and never opened
		return nil
	}
	n := m.queues.length(k)
	if m.mode == modeDetail && m.detail != nil && m.detail.key == k {
		n = max(n, len(m.detail.queue))
	}
	if n == 0 {
		m.setStatus(statusWarn, "nothing to clear: "+keyText(k, 24)+" has no queue")
		return nil
	}
	if m.refusedIn(k.Context, "clearing a queue") {
		return nil
	}
	m.dialog = &dialog{clear: &queueClear{key: k, tickets: n}, reason: m.reasonInput()}
	m.mode, m.detail = modeConfirm, nil
	return m.protect(k.Context)
}

// confirmClear sends the clear of the dialog's queue.
func (m *Model) confirmClear() tea.Cmd {
	c := m.dialog.clear
	reason := strings.TrimSpace(m.dialog.reason.Value())
	if err := data.ValidateReason(reason); err != nil {
		m.setStatus(statusError, "cannot clear: "+err.Error())
		return nil
	}
	req := clearQueueReq{key: c.key, reason: reason}
	m.dialog, m.mode = nil, modeMain
	m.setStatus(statusInfo, "clearing the queue of "+keyText(c.key, 24)+"…")
	clear := m.cfg.Source.ClearQueueFunc
	return func() tea.Msg {
		if clear == nil {
			return queueClearedMsg{req: req, err: errNoClear}
		}
		n, err := clear(req.key, req.reason)
		return queueClearedMsg{req: req, cleared: n, err: err}
	}
}

// errNoClear: the embedding program gave no way to clear a queue.
var errNoClear = errors.New("this monitor cannot clear queues")

func (m *Model) onQueueCleared(msg queueClearedMsg) tea.Cmd {
	who := keyText(msg.req.key, 24)
	switch {
	case msg.err != nil:
		m.setStatus(statusError, "clearing the queue of "+who+" failed: "+clean(oneLine(msg.err.Error()), 0))
	case msg.cleared == 0:
		m.setStatus(statusWarn, "nothing cleared: the queue of "+who+" had no live ticket")
	default:
		m.setStatus(statusOK, fmt.Sprintf("cleared %d %s from the queue of %s", msg.cleared, plural(msg.cleared, "ticket", "tickets"), who))
		m.queues.readAt = time.Time{} // read the lengths again at the next tick
	}
	return nil
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// viewClearDialog is the clear-queue confirmation box: the session, how
// many waiters it will stop, and the reason.
func (m *Model) viewClearDialog() string {
	s, d := m.styles, m.dialog
	w := m.dialogInnerWidth()
	row := func(name, value string) string {
		return s.dim.Render(pad(name, 9)) + " " + fit(value, w-10)
	}
	now := m.queues.length(d.clear.key)
	waiting := fmt.Sprintf("%d %s", d.clear.tickets, plural(d.clear.tickets, "ticket", "tickets"))
	if now != d.clear.tickets {
		waiting += fmt.Sprintf(" when opened, %d now", now)
	}
	lines := []string{
		s.bad.Render("Clear this session's queue?"),
		"",
	}
	if d.clear.key.Context != "" {
		lines = append(lines, row("context", clean(d.clear.key.Context, w-10)))
	}
	lines = append(lines,
		row("account", idText(d.clear.key.Account, w-10)),
		row("session", idText(d.clear.key.Session, w-10)),
		row("queue", waiting),
		s.dim.Render(fit("every waiter stops waiting; the lease is not touched", w)),
	)
	return m.dialogEnd(lines, row, "Clear it? (y/N)", "clear")
}
