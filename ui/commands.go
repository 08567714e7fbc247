package ui

import (
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Messages the model's commands deliver.
type (
	// batchMsg is the feed's next batch; ok false when the feed stopped.
	batchMsg struct {
		batch monitor.Batch
		ok    bool
	}
	// tickMsg redraws the countdowns.
	tickMsg time.Time
	// historyMsg is a session's history for the detail view.
	historyMsg struct {
		key    monitor.Key
		events []data.Event
		err    error
	}
	// lockersMsg is what holds a session's lease row locked, for the detail
	// view.
	lockersMsg struct {
		key     monitor.Key
		lockers []data.Locker
		err     error
	}
	// releaseMsg is the outcome of a forced release.
	releaseMsg struct {
		req    releaseReq
		result ReleaseResult
		err    error
	}
	// actionMsg is an extra action's outcome.
	actionMsg struct {
		text string
		err  error
	}
)

// releaseReq is a confirmed forced release: the lease as it was shown.
type releaseReq struct {
	key    monitor.Key
	run    uuid.UUID
	holder string
	reason string
}

// waitNext waits for the feed's next batch.
func (m *Model) waitNext() tea.Cmd {
	next := m.cfg.Source.NextFunc
	if next == nil {
		return nil
	}
	freed := m.resynced
	m.resynced = 0
	return func() tea.Msg {
		monitor.FreeAfterResync(freed) // the resync's read is garbage by now
		b, ok := next()
		return batchMsg{batch: b, ok: ok}
	}
}

// tick schedules the next countdown redraw.
func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.cfg.Tick, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// loadHistory reads key's history for the detail view.
func (m *Model) loadHistory(key monitor.Key) tea.Cmd {
	history := m.cfg.Source.HistoryFunc
	if history == nil {
		return nil
	}
	return func() tea.Msg {
		evs, err := history(key)
		return historyMsg{key: key, events: evs, err: err}
	}
}

// loadLockers reads what holds key's lease row locked, for the detail view.
func (m *Model) loadLockers(key monitor.Key) tea.Cmd {
	lockers := m.cfg.Source.LockersFunc
	if lockers == nil {
		return nil
	}
	return func() tea.Msg {
		lks, err := lockers(key)
		return lockersMsg{key: key, lockers: lks, err: err}
	}
}

// errNoRelease: the embedding program gave no way to release.
var errNoRelease = errors.New("this monitor cannot release leases")

// release force-releases req's lease if its shown run still holds it.
func (m *Model) release(req releaseReq) tea.Cmd {
	release := m.cfg.Source.ReleaseFunc
	return func() tea.Msg {
		if release == nil {
			return releaseMsg{req: req, err: errNoRelease}
		}
		res, err := release(req.key, req.run, req.reason)
		return releaseMsg{req: req, result: res, err: err}
	}
}

// runAction runs an extra action on the selected lease.
func runAction(a Action, sel data.Lease, ok bool) tea.Cmd {
	return func() tea.Msg {
		text, err := a.RunFunc(sel, ok)
		return actionMsg{text: text, err: err}
	}
}
