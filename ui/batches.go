package ui

import (
	"fmt"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// holdBatch reports whether a batch from the feed waits for the next tick
// instead of being shown at once: above bigTable leases, unless it is a
// resync (the first picture, and the one the user asked for, show at
// once). A monitor of a big fleet then draws a new picture once a tick,
// however many batches arrive in between: five a second rather than one per
// batch, while idle as well as at 1000 transitions a second. The rows of a
// big table already wait for the tick; this holds the header and the events
// pane with them, so what the screen shows is always one moment's picture.
func (m *Model) holdBatch(b monitor.Batch) bool {
	if m.state.Len() <= bigTable {
		return false
	}
	for _, it := range b.Items {
		if it.Sync != nil {
			return false
		}
	}
	return true
}

// applyPending applies the held batches, oldest first.
func (m *Model) applyPending() {
	for i, b := range m.pending {
		m.applyBatch(b)
		m.pending[i] = monitor.Batch{}
	}
	if len(m.pending) > 0 {
		m.pending = m.pending[:0]
		m.pruneRows()
	}
}

// applyBatch applies one batch to the live state at m.now and refreshes
// what derives from it.
func (m *Model) applyBatch(b monitor.Batch) {
	synced := false
	for _, it := range b.Items {
		synced = synced || it.Sync != nil
	}
	polled := m.state.Health(m.now).Poll > 0
	for _, ev := range m.state.Apply(b, m.now) {
		m.asks.known.Apply(ev)
		if ev.Kind == data.KindLimitSet {
			m.limits.wake()
		}
	}
	if synced {
		m.limits.wake() // the outage may have hidden a limit_set
	}
	if h := m.state.Health(m.now); h.Poll > 0 && !polled {
		m.pollStatus(h)
	}
	if m.resyncing && synced {
		m.resyncing = false
		m.setStatus(statusOK, fmt.Sprintf("resynced: %d leases", m.state.Len()))
	}
	switch {
	case m.frozen != nil:
	case synced:
		m.syncRows()               // a resync replaced every lease: the old rows name none
		m.resynced = m.state.Len() // waitNext frees the read's memory once this Update is done with it
	case m.mode == modeTimeline && len(m.rows) > 0:
		m.rowsDirty = true // the table is not on screen: rebuilt when it is, or when the lanes scroll
	case m.now.Sub(m.builtAt) < m.rebuildEvery():
		m.rowsDirty = true // shown on a later tick
	default:
		m.syncRows()
	}
	if len(m.pending) == 0 { // else once after the last held batch
		m.pruneRows()
	}
	m.reselectEvent()
}

// pollStatus says once, in the status line, that the feed polls and why;
// the header says POLL from then on.
func (m *Model) pollStatus(h monitor.Health) {
	kind := statusWarn
	if h.PollReason.Cause == data.PollRequested {
		kind = statusInfo
	}
	m.setStatus(kind, "polling: "+clean(oneLine(h.PollReason.String()), 0))
}
