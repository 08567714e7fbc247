package ui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The asks to hand over pending: the table's ASK column names
// the asker of a held session's pending ask, shown only while a session on
// screen has one. They are read every queuePollEvery (an ask can end
// without an event, at its deadline) and followed between reads by the
// hand-over events the feed brings (monitor.Asks).

// asksMsg is every pending ask, read after the event cursor.
type asksMsg struct {
	asks   map[monitor.Key]data.PendingAsk
	cursor map[string]int64 // each context's newest event applied when the read was asked
	err    error
}

// askPoll is the asks known and the last read of them.
type askPoll struct {
	known   monitor.Asks
	readAt  time.Time
	reading bool
}

// pollAsks reads the pending asks if the last read is older than
// queuePollEvery and none is in flight.
func (m *Model) pollAsks() tea.Cmd {
	read := m.cfg.Source.AsksFunc
	if read == nil || m.asks.reading || m.now.Sub(m.asks.readAt) < queuePollEvery {
		return nil
	}
	m.asks.reading = true
	cursor := newestEvents(m.state)
	return func() tea.Msg {
		a, err := read()
		return asksMsg{asks: a, cursor: cursor, err: err}
	}
}

// onAsks takes a read of the pending asks, and the events applied since it
// was asked (the read may have missed them, or seen them: applying one
// again changes nothing).
func (m *Model) onAsks(msg asksMsg) {
	m.asks.reading, m.asks.readAt = false, m.cfg.Now()
	if msg.err != nil {
		return // the last asks stay; the feed reports the connection
	}
	m.asks.known.Reset(msg.asks)
	evs := m.state.Events() // newest first
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].ID > msg.cursor[evs[i].Context] {
			m.asks.known.Apply(evs[i])
		}
	}
}

// newestEvents is the largest event id st keeps of each context (ids are
// each database's own).
func newestEvents(st *monitor.State) map[string]int64 {
	out := map[string]int64{}
	for _, ev := range st.Events() {
		out[ev.Context] = max(out[ev.Context], ev.ID)
	}
	return out
}

// askOf is the ask pending on l at now, on l's server's clock, if any.
func (m *Model) askOf(l *data.Lease, now time.Time) (data.PendingAsk, bool) {
	return m.asks.known.For(*l, m.shown().ServerNowIn(l.Context, now))
}

// askText names the asker of a, as the ASK column shows it: its label, or
// its run when it gave none.
func askText(a data.PendingAsk) string {
	if a.Holder != "" {
		return a.Holder
	}
	return "run " + shortRun(a.RunID)
}
