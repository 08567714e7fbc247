package ui

import (
	"fmt"
	"strings"

	"github.com/leasetop/leasetop/monitor"
)

// viewDialog is the forced-release confirmation box: the lease exactly as
// it was shown (the run that will be released), live time left, and a
// warning if the lease changed hands while the dialog was open.
func (m *Model) viewDialog() string {
	if m.dialog.clear != nil {
		return m.viewClearDialog()
	}
	s, d := m.styles, m.dialog
	w := m.dialogInnerWidth()
	l := d.lease
	shown := m.shown()
	serverNow := shown.ServerNow(m.shownNow())
	row := func(name, value string) string {
		return s.dim.Render(pad(name, 9)) + " " + fit(value, w-10)
	}
	holder := idText(l.Holder, w-10)
	if holder == "" {
		holder = s.dim.Render("(no label)")
	}
	left := l.ExpiresAt.Sub(serverNow)
	cur, held := shown.LeaseOf(monitor.KeyOf(l))
	if held && cur.RunID == l.RunID {
		left = cur.ExpiresAt.Sub(serverNow)
	}
	ttl := "expires in " + compact(left)
	if left <= 0 {
		ttl = s.bad.Render("expired " + compact(-left) + " ago")
	}
	lines := []string{
		s.bad.Render("Force release this lease?"),
		"",
	}
	if l.Context != "" {
		lines = append(lines, row("context", clean(l.Context, w-10)))
	}
	lines = append(lines,
		row("account", idText(l.Account, w-10)),
		row("session", idText(l.Session, w-10)),
		row("holder", holder),
		row("run", l.RunID.String()),
		row("fence", fmt.Sprint(l.Fence)),
		row("TTL left", ttl),
	)
	switch {
	case !held:
		lines = append(lines, s.warn.Render(fit("⚠ the lease ended since: confirming releases nothing", w)))
	case cur.RunID != l.RunID:
		lines = append(lines, s.warn.Render(fit("⚠ now held by run "+shortRun(cur.RunID)+": confirming releases nothing", w)))
	}
	return m.dialogEnd(lines, row, "Release it? (y/N)", "release")
}

// dialogEnd finishes a dialog's box: lines, then the reason field (shown
// with row), the question and what y does, each fitted to the box.
func (m *Model) dialogEnd(lines []string, row func(name, value string) string, question, verb string) string {
	s, d := m.styles, m.dialog
	w := m.dialogInnerWidth()
	reason := d.reason.View()
	if !d.editing && d.reason.Value() == "" {
		reason = s.dim.Render("(none; " + m.keys.Focus.Help().Key + " to add one)")
	}
	lines = append(lines, row("reason", reason), "")
	switch {
	case d.editing:
		question = s.dim.Render("enter or tab: done · esc: cancel")
	case d.typed != nil:
		lines = append(lines, s.warn.Render(fit("protected context: type the session id to "+verb+" it", w)), row("session", d.typed.View()), "")
		question = s.dim.Render("enter " + verb + " (once typed) · esc cancel · " + m.keys.Focus.Help().Key + " reason")
	default:
		question = s.bold.Render(question) + s.dim.Render("  "+m.keys.Confirm.Help().Key+" "+verb+" · "+m.keys.Cancel.Help().Key+" cancel")
	}
	lines = append(lines, question)
	for i, line := range lines {
		lines[i] = pad(fit(line, w), w)
	}
	return s.dialogBox.Render(strings.Join(lines, "\n"))
}
