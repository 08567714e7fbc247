package ui

import (
	"fmt"
	"strings"

	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// accountsView is the accounts view's state (modeAccounts).
type accountsView struct {
	sortBy   accountSort
	cur, off int
	// rows is accountRows' last answer, for the read, order and filter in
	// rowsOf: thousands of limits are not sorted again for every frame.
	rows   []AccountLimit
	rowsOf accountRowsKey
	body   accountsBody // the rendered lines, until the rows or the window change
}

// accountsBody is the accounts view's column header and rows as last
// rendered, and what from: the lines change only with a read, a key or
// the screen's size, not with the frames between.
type accountsBody struct {
	key   accountsBodyKey
	lines []string
}

type accountsBodyKey struct {
	rows                  accountRowsKey
	off, page, cur, width int
}

// accountRowsKey is what the accounts view's rows were listed from.
type accountRowsKey struct {
	ok     bool
	readAt time.Time
	sortBy accountSort
	filter string
}

// openAccounts opens the accounts view, and reads the limits now unless
// a read is in flight.
func (m *Model) openAccounts() tea.Cmd {
	m.mode = modeAccounts
	m.limits.wake() // not to wait for the next poll
	return m.pollLimits()
}

// accountsKey handles the accounts view's keys: move, sort, filter, help,
// back (esc clears the filter first).
func (m *Model) accountsKey(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.keys
	a := &m.acct
	n := len(m.accountRows())
	page := max(m.accountsPage(), 1)
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.openHelp()
	case key.Matches(msg, k.Filter):
		a.cur, a.off = 0, 0
		return m.startFilter()
	case key.Matches(msg, k.Back) && m.filter != "":
		m.clearFilter()
	case key.Matches(msg, k.Back, k.Accounts):
		m.mode = modeMain
	case key.Matches(msg, k.Sort):
		a.sortBy = (a.sortBy + 1) % numAccountSorts
		a.cur, a.off = 0, 0
		m.setStatus(statusInfo, "accounts sorted by "+a.sortBy.String())
	case key.Matches(msg, k.Up):
		a.cur--
	case key.Matches(msg, k.Down):
		a.cur++
	case key.Matches(msg, k.PageUp):
		a.cur -= page
	case key.Matches(msg, k.PageDown):
		a.cur += page
	case key.Matches(msg, k.Top):
		a.cur = 0
	case key.Matches(msg, k.Bottom):
		a.cur = n - 1
	}
	a.cur = min(max(a.cur, 0), max(n-1, 0))
	a.off = min(max(a.off, a.cur-page+1), a.cur)
	return nil
}

// accountsPage is how many limits the accounts view shows at once: the
// screen less the header, the view's title, its column header and the
// status line.
func (m *Model) accountsPage() int {
	return m.height - len(m.viewHeader(m.layout())) - 3
}

// viewAccounts is the header, the limits (one a line: context, account,
// pool, slots used of the limit, a saturation bar, queued tickets, the
// sessions holding the slots) and the status line.
func (m *Model) viewAccounts() []string {
	s := m.styles
	lines := m.viewHeader(m.layout())
	rows := m.accountRows()
	title := "─ ACCOUNTS limits, " + map[accountSort]string{accountsBySaturation: "fullest first", accountsByName: "by account"}[m.acct.sortBy]
	page := max(m.accountsPage(), 1)
	off := min(m.acct.off, max(len(rows)-page, 0))
	if len(rows) > page {
		title += fmt.Sprintf("  %d-%d/%d", off+1, min(off+page, len(rows)), len(rows))
	}
	title += fmt.Sprintf("  (%s sort, %s back; read %s ago)", m.keys.Sort.Help().Key, m.keys.Back.Help().Key,
		compact(m.now.Sub(m.limits.readAt)))
	title = fit(title, m.width)
	lines = append(lines, s.paneTitle.Render(title)+" "+s.dim.Render(strings.Repeat("─", max(m.width-ansi.StringWidth(title)-1, 0))))
	switch {
	case m.cfg.Source.LimitsFunc == nil:
		return m.accountsEnd(append(lines, "  "+s.dim.Render("this monitor reads no limits")))
	case !m.limits.read:
		return m.accountsEnd(append(lines, "  "+s.dim.Render("reading the limits…")))
	case m.limits.err != nil && len(m.limits.list) == 0:
		return m.accountsEnd(append(lines, "  "+s.bad.Render("reading the limits: "+clean(oneLine(m.limits.err.Error()), 0))))
	case len(m.limits.list) == 0:
		return m.accountsEnd(append(lines, "  "+s.dim.Render("no limits: every account may run any number of runs (leasetop limit set ACCOUNT N)")))
	case len(rows) == 0:
		return m.accountsEnd(append(lines, "  "+s.dim.Render(fmt.Sprintf("no limit matches %q (esc clears the filter)", clean(m.filter, 20)))))
	}
	key := accountsBodyKey{rows: m.acct.rowsOf, off: off, page: page, cur: m.acct.cur, width: m.width}
	if m.acct.body.key != key {
		m.acct.body = accountsBody{key: key, lines: m.renderAccounts(rows[off:min(off+page, len(rows))], off)}
	}
	return m.accountsEnd(append(lines, m.acct.body.lines...))
}

// renderAccounts renders the accounts view's column header and the limits
// shown, the first of which is row off.
func (m *Model) renderAccounts(shown []AccountLimit, off int) []string {
	s := m.styles
	var lines []string
	// Widths: the widest value shown, the names capped.
	ctxW, acctW, poolW, slotsW := 0, len("ACCOUNT"), len("POOL"), len("SLOTS")
	for _, r := range shown {
		if r.Context != "" {
			ctxW = max(ctxW, len("CONTEXT"), ansi.StringWidth(clean(r.Context, 0)))
		}
		acctW = max(acctW, min(ansi.StringWidth(idText(r.Account, 0)), 24))
		poolW = max(poolW, min(ansi.StringWidth(idText(r.Pool, 0)), 16))
		slotsW = max(slotsW, len(fmt.Sprintf("%d/%d", r.Used, r.Slots)))
	}
	const barW = 10
	cell := func(ctx, acct, pool, slots, sat, queued, held string) string {
		line := ""
		if ctxW > 0 {
			line = pad(ctx, ctxW) + " "
		}
		return line + pad(acct, acctW) + " " + pad(pool, poolW) + " " + padLeft(slots, slotsW) + " " + pad(sat, barW+5) + " " +
			padLeft(queued, 6) + " " + held
	}
	lines = append(lines, s.bold.Render(fit("  "+cell("CONTEXT", "ACCOUNT", "POOL", "SLOTS", "SATURATION", "QUEUED", "HELD BY"), m.width)))
	for i, r := range shown {
		sat := r.Saturation()
		style := s.ok
		switch {
		case sat >= 1:
			style = s.bad
		case sat >= 0.75:
			style = s.warn
		}
		filled := min(int(sat*barW+0.5), barW)
		bar := style.Render(strings.Repeat("█", filled)) + s.dim.Render(strings.Repeat("░", barW-filled)) +
			" " + style.Render(padLeft(fmt.Sprintf("%.0f%%", sat*100), 4))
		pool := "-"
		if r.Pool != "" {
			pool = idText(r.Pool, 16)
		}
		queued := ""
		if r.Queued > 0 {
			queued = fmt.Sprint(r.Queued)
		}
		marker := "  "
		if off+i == m.acct.cur {
			marker = "▶ "
		}
		line := marker + cell(clean(r.Context, 0), idText(r.Account, 24), pool, fmt.Sprintf("%d/%d", r.Used, r.Slots), bar, queued,
			m.slotHolders(r))
		lines = append(lines, fit(line, m.width))
	}
	return lines
}

// slotHolders names the sessions holding a limit's slots, with the holder
// and the time its lease had left when read: "chat-1 (desktop, 12s)".
func (m *Model) slotHolders(r AccountLimit) string {
	if len(r.Holders) == 0 {
		return m.styles.dim.Render("-")
	}
	words := make([]string, 0, len(r.Holders))
	for _, h := range r.Holders {
		words = append(words, fmt.Sprintf("%s (%s, %s)", idText(h.Session, 24), idText(h.Holder, 24), compact(h.Remaining)))
	}
	return strings.Join(words, ", ")
}

// accountsEnd fills the screen and ends it with the status line.
func (m *Model) accountsEnd(lines []string) []string {
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	return append(lines, m.viewStatus())
}
