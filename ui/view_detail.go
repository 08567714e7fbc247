package ui

import (
	"fmt"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// timeFormat shows server timestamps in the detail view.
const timeFormat = "2006-01-02 15:04:05.000 MST"

// viewDetail is one session in full: every field unshortened (wrapped), and
// its history from lease.event.
func (m *Model) viewDetail() []string {
	s, d := m.styles, m.detail
	shown := m.shown()
	serverNow := shown.ServerNow(m.shownNow())
	l, held := shown.LeaseOf(d.key)
	hint := m.keys.Back.Help().Key + " back"
	if m.keys.Release.Enabled() && held {
		hint += ", " + m.keys.Release.Help().Key + " release"
	}
	if m.keys.ClearQueue.Enabled() && len(d.queue) > 0 {
		hint += ", " + m.keys.ClearQueue.Help().Key + " clear the queue"
	}
	lines := []string{s.title.Render("Session") + " " + keyText(d.key, 0) + s.dim.Render("   ("+hint+")"), ""}
	field := m.fieldLines(&lines)
	field("account", m.exactText(d.key.Account))
	field("session", m.exactText(d.key.Session))
	if !held {
		lines = append(lines, "  "+s.warn.Render("not held now"))
		if d.held {
			lines = append(lines, "  "+s.dim.Render(fmt.Sprintf("(was held by run %s when this view opened)", d.opened.RunID)))
		}
	} else {
		holder := m.exactText(l.Holder)
		if holder == "" {
			holder = s.dim.Render("(no label)")
		}
		field("holder", holder)
		field("run", l.RunID.String())
		field("fence", fmt.Sprint(l.Fence))
		field("acquired", m.stamp(l.AcquiredAt)+s.dim.Render("  held for "+compact(serverNow.Sub(l.AcquiredAt))))
		field("renewed", m.stamp(l.RenewedAt)+s.dim.Render("  "+compact(serverNow.Sub(l.RenewedAt))+" ago"))
		left := l.ExpiresAt.Sub(serverNow)
		expiry := m.stamp(l.ExpiresAt) + "  " + m.fractionStyle(shown.Fraction(l, serverNow)).Render("in "+compact(left))
		switch {
		case left <= 0 && len(d.lockers) > 0:
			expiry = m.stamp(l.ExpiresAt) + "  " + s.bad.Render("expired "+compact(-left)+" ago, not taken over: a transaction holds its row")
		case left <= 0:
			expiry = m.stamp(l.ExpiresAt) + "  " + s.bad.Render("expired "+compact(-left)+" ago, not taken over: a lost holder?")
		}
		field("expires", expiry)
		field("ttl", compact(l.ExpiresAt.Sub(l.RenewedAt)))
		m.declaredLines(field, l, shown.Declared(d.key))
		m.lockerLines(field, left <= 0)
		m.askLines(field, l, serverNow)
		m.inboxLines(field, d.key)
		m.slotLines(field, d.key)
		if d.held && d.opened.RunID != l.RunID {
			lines = append(lines, "  "+s.warn.Render(fmt.Sprintf("changed hands since this view opened (was run %s)", shortRun(d.opened.RunID))))
		}
	}
	lines = m.queueLines(lines, serverNow)
	return m.appendList(lines, listView{title: "History", note: " newest first, from lease.event",
		loading: d.loading, err: d.err, what: "the history", empty: "no events",
		n: len(d.history), scroll: d.scroll, line: func(i int) string { return m.historyLine(d.history[i]) }})
}

// declaredLines shows what the holder declared at acquire: whether it may
// be preempted, and its attachment (the stream a joiner follows). A lease
// known only from its grant's event has neither read yet (declared false).
func (m *Model) declaredLines(field func(name, value string), l data.Lease, declared bool) {
	s := m.styles
	if !declared {
		unread := s.dim.Render("not read yet (the grant's event does not say; the lease's row is read within a second)")
		field("preemptible", unread)
		field("attachment", unread)
		return
	}
	if l.NotPreemptible {
		field("preemptible", s.warn.Render("no: the holder declared it must not be preempted (a preempt is refused)"))
	} else {
		field("preemptible", "yes")
	}
	if l.Attachment == "" {
		field("attachment", s.dim.Render("none"))
	} else {
		field("attachment", m.exactText(l.Attachment))
	}
}

// lockerLines names the transactions holding the lease row locked. For an
// expired lease they are why nobody has taken it over: whom to end.
func (m *Model) lockerLines(field func(name, value string), expired bool) {
	s, d := m.styles, m.detail
	if d.lockErr != nil {
		field("locked by", s.dim.Render("cannot tell: "+clean(oneLine(d.lockErr.Error()), 0)))
		return
	}
	for _, lk := range d.lockers {
		text := lockerText(lk)
		if expired {
			field("locked by", s.bad.Render(text))
			field("", s.bad.Render(fmt.Sprintf("no takeover can commit until this transaction ends: SELECT pg_terminate_backend(%d)", lk.PID)))
		} else {
			field("locked by", text+s.dim.Render("  (a fence-checked write in progress)"))
		}
	}
}

// lockerText describes a transaction holding a lease row: pid, state and
// for how long, application and user (untrusted text, cleaned).
func lockerText(lk data.Locker) string {
	text := fmt.Sprintf("pid %d", lk.PID)
	if lk.Visible {
		text += fmt.Sprintf(", %s for %s (transaction open %s)", clean(lk.State, 0), compact(lk.InState), compact(lk.InTx))
	} else {
		text += ", state hidden from this role"
	}
	if lk.App != "" {
		text += `, app "` + clean(lk.App, 0) + `"`
	}
	if lk.User != "" {
		text += ", user " + clean(lk.User, 0)
	}
	return text
}

// historyLine is an event in the detail view: the date too, no session.
func (m *Model) historyLine(ev data.Event) string {
	return m.eventLine(ev, false, "", "2006-01-02 15:04:05")
}

func (m *Model) stamp(t time.Time) string { return t.In(m.cfg.Location).Format(timeFormat) }

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
