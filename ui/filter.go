package ui

import (
	"strings"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The filter (/) applies to every pane, as in k9s: the sessions table keeps
// the leases it matches (matches), the events pane the events about them,
// the devices pane the devices that are about them. Each pane says when the
// filter hides all it has.

// containsFold reports whether any of values contains f, which is lower
// case, in any case.
func containsFold(f string, values ...string) bool {
	for _, s := range values {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}

// runText is a run id as the filter sees it: none for the nil id, so a
// filter of zeros does not match every event without a previous run.
func runText(id uuid.UUID) string {
	if id == uuid.Nil {
		return ""
	}
	return id.String()
}

// eventMatches reports whether ev passes the filter: a case-insensitive
// substring of its account, session, holder, either run id, or its
// context's name.
func eventMatches(ev data.Event, filter string) bool {
	if filter == "" {
		return true
	}
	return containsFold(strings.ToLower(filter), ev.Key.Account, ev.Key.Session, ev.Holder, runText(ev.RunID), runText(ev.PrevRunID), ev.Context)
}

// deviceMatches reports whether d passes the filter: a case-insensitive
// substring of its account, its name, its holder label, or the session or
// run of its state or of what it believes it holds.
func deviceMatches(d monitor.Device, filter string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	if containsFold(f, d.Account, d.Name, d.Holder) ||
		(d.Key != (data.Key{}) && containsFold(f, d.Key.Session, runText(d.Run))) {
		return true
	}
	for _, b := range d.Believes {
		if containsFold(f, b.Key.Session, runText(b.Run)) {
			return true
		}
	}
	return false
}

// filteredEvents is the events pane's list: the shown state's events that
// pass the filter, kept until the state, its version or the filter change.
type filteredEvents struct {
	of      *monitor.State
	version uint64
	filter  string
	list    []data.Event
}

// events returns the events on screen, newest first: the shown state's,
// filtered. The slice is shared: do not modify it.
func (m *Model) events() []data.Event {
	st := m.shown()
	if m.filter == "" {
		return st.Events()
	}
	c := &m.evFiltered
	if c.of != st || c.version != st.Version() || c.filter != m.filter {
		c.of, c.version, c.filter, c.list = st, st.Version(), m.filter, c.list[:0]
		for _, ev := range st.Events() {
			if eventMatches(ev, m.filter) {
				c.list = append(c.list, ev)
			}
		}
	}
	return c.list
}

// setFilter applies a new filter to every pane, keeping each pane's
// selection where it still is.
func (m *Model) setFilter(f string) {
	m.filter = f
	m.refreshRows() // the sessions, and the events' cursor
	m.reselectDevice()
	m.clampTable()
	m.clampEvents()
	m.clampDevices()
}
