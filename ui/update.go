package ui

import (
	"fmt"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// statusKind colours the status line.
type statusKind int

const (
	statusInfo statusKind = iota
	statusOK
	statusWarn
	statusError
)

// statusFor is how long a status message stays before the key hints return.
const statusFor = 10 * time.Second

// Update dispatches each message to its handler.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m, m.onResize(msg)
	case tea.BackgroundColorMsg:
		if m.cfg.Theme == nil { // a chosen theme stays; the automatic one follows the background
			m.styles = newStyles(m.cfg.theme(msg.IsDark()))
			m.cache.reset()
			m.acct.body = accountsBody{} // drawn with the old styles
		}
		return m, nil
	case tickMsg:
		return m, m.onTick()
	case batchMsg:
		return m, m.onBatch(msg)
	case historyMsg:
		return m, m.onHistory(msg)
	case lockersMsg:
		return m, m.onLockers(msg)
	case queuesMsg:
		m.onQueues(msg)
	case inboxesMsg:
		m.onInboxes(msg)
	case limitsMsg:
		m.onLimits(msg)
		return m, nil
	case asksMsg:
		m.onAsks(msg)
		return m, nil
	case queueMsg:
		m.onQueue(msg)
		return m, nil
	case releaseMsg:
		return m, m.onRelease(msg)
	case queueClearedMsg:
		return m, m.onQueueCleared(msg)
	case actionMsg:
		return m, m.onAction(msg)
	case devicesMsg:
		return m, m.onDevices(msg)
	case attemptsMsg:
		return m, m.onAttempts(msg)
	case timelineMsg:
		return m, m.onTimeline(msg)
	case ownersMsg:
		return m, m.onOwners(msg)
	case tea.KeyPressMsg:
		m.now = m.cfg.Now()
		return m, m.onKey(msg)
	}
	return m, m.forwardToInputs(msg)
}

func (m *Model) onResize(msg tea.WindowSizeMsg) tea.Cmd {
	m.width, m.height = msg.Width, msg.Height
	m.filterIn.SetWidth(max(m.width-4, 10))
	if m.dialog != nil {
		m.dialog.reason.SetWidth(max(m.dialogInnerWidth()-12, 8))
	}
	m.clampTable()
	m.clampEvents()
	return m.timelineResized()
}

func (m *Model) onTick() tea.Cmd {
	m.now = m.cfg.Now()
	m.applyPending()
	if m.status != "" && m.now.Sub(m.statusAt) > statusFor {
		m.status = ""
	}
	switch {
	case !m.holdUntil.IsZero() && !m.now.Before(m.holdUntil):
		m.holdUntil, m.order = time.Time{}, nil
		if m.frozen == nil {
			m.refreshRows() // the held order ends: sort again
		} else {
			m.refreshCounts()
		}
	case m.rowsDirty && m.frozen == nil && m.mode != modeTimeline && m.now.Sub(m.builtAt) >= m.rebuildEvery():
		m.syncRows()
	default:
		m.refreshCounts()
	}
	return tea.Batch(m.tick(), m.pollQueues(), m.pollAsks(), m.pollInboxes(), m.pollLimits(), m.timelineTick())
}

// onBatch applies the feed's batch to the live state, or holds it for the
// next tick (see holdBatch). While paused the screen keeps showing the
// frozen copy; the data keeps flowing.
func (m *Model) onBatch(msg batchMsg) tea.Cmd {
	if !msg.ok {
		return nil // the feed stopped: the program is ending
	}
	if m.holdBatch(msg.batch) {
		m.pending = append(m.pending, msg.batch)
		return m.waitNext()
	}
	m.now = m.cfg.Now()
	m.applyPending()
	m.applyBatch(msg.batch)
	return m.waitNext()
}

func (m *Model) onHistory(msg historyMsg) tea.Cmd {
	if m.detail == nil || m.detail.key != msg.key {
		return nil
	}
	m.detail.loading = false
	m.detail.history, m.detail.err = namedHistory(msg.events), msg.err
	return nil
}

// namedHistory is a session's history (newest first) with the previous
// holder of each hand-over named (monitor.NamePrevHolders).
func namedHistory(evs []data.Event) []data.Event {
	old := slices.Clone(evs)
	slices.Reverse(old)
	old = monitor.NamePrevHolders(old, nil)
	slices.Reverse(old)
	return old
}

func (m *Model) onLockers(msg lockersMsg) tea.Cmd {
	if m.detail == nil || m.detail.key != msg.key {
		return nil
	}
	m.detail.lockers, m.detail.lockErr = msg.lockers, msg.err
	return nil
}

func (m *Model) onRelease(msg releaseMsg) tea.Cmd {
	m.inflight = nil
	who := keyText(msg.req.key, 24)
	switch {
	case msg.err != nil:
		m.setStatus(statusError, "force release of "+who+" failed: "+clean(oneLine(msg.err.Error()), 0))
	case msg.result.Released:
		m.setStatus(statusOK, fmt.Sprintf("force released %s (run %s, %s)", who, shortRun(msg.req.run), holderText(msg.req.holder, 24)))
	case msg.result.Held:
		now := msg.result.Now
		m.setStatus(statusWarn, fmt.Sprintf("nothing released: %s changed hands (now held by run %s, %s)",
			who, shortRun(now.RunID), holderText(now.Holder, 24)))
	default:
		m.setStatus(statusWarn, "nothing released: the lease on "+who+" had already ended")
	}
	return nil
}

func (m *Model) onAction(msg actionMsg) tea.Cmd {
	if msg.err != nil {
		m.setStatus(statusError, clean(oneLine(msg.err.Error()), 0))
	} else if msg.text != "" {
		m.setStatus(statusInfo, clean(msg.text, 0))
	}
	return nil
}

// forwardToInputs gives other messages (cursor blinks) to the focused
// text input.
func (m *Model) forwardToInputs(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	switch {
	case m.dialog != nil && m.dialog.editing:
		m.dialog.reason, cmd = m.dialog.reason.Update(msg)
	case m.filtering:
		m.filterIn, cmd = m.filterIn.Update(msg)
	}
	return cmd
}

func (m *Model) setStatus(kind statusKind, text string) {
	m.status, m.statusKind, m.statusAt = text, kind, m.cfg.Now()
}

// holderText is a holder label for a status line.
func holderText(holder string, width int) string {
	if holder == "" {
		return "no holder label"
	}
	return "holder " + idText(holder, width)
}

// keyText is account/session, each cleaned and shortened to width, with
// their runes outside ASCII marked (idText); after "context:" in a monitor
// of several databases.
func keyText(k monitor.Key, width int) string {
	text := idText(k.Account, width) + "/" + idText(k.Session, width)
	if k.Context != "" {
		text = clean(k.Context, 0) + ":" + text
	}
	return text
}
