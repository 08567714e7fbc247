package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/monitor"
)

// viewHeader is the connection line, the contexts' line of a monitor of
// several databases and, when there is room, the counts line.
func (m *Model) viewHeader(lay layout) []string {
	lines := []string{m.headerLine1()}
	if lay.contexts {
		lines = append(lines, m.contextsLine())
	}
	if lay.header2 {
		lines = append(lines, m.headerLine2())
	}
	return lines
}

// segment is a piece of a header line. When the line does not fit, the
// segments with the highest drop are left out first; drop 0 stays.
type segment struct {
	text string
	drop int
}

func joinSegments(segs []segment, width int) string {
	for {
		var parts []string
		for _, s := range segs {
			if s.text != "" {
				parts = append(parts, s.text)
			}
		}
		line := strings.Join(parts, "  ")
		if ansi.StringWidth(line) <= width {
			return line
		}
		worst := -1
		for i, s := range segs {
			if s.drop > 0 && s.text != "" && (worst < 0 || s.drop > segs[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			return fit(line, width)
		}
		segs[worst].text = ""
	}
}

// headerLine1: title, database, connection, sync age, clock offset, badges;
// in a monitor of several databases, how many are live and how many not
// (the contexts' line says which).
func (m *Model) headerLine1() string {
	if len(m.cfg.Contexts) > 0 {
		return m.contextsSummary()
	}
	st, s := m.state, m.styles
	h := st.Health(m.now)
	link := m.linkText(h)
	synced := s.bad.Render("not synced yet")
	if st.Synced() {
		synced = "synced " + compact(h.SyncedAgo) + " ago"
		if h.Stale {
			synced = s.bad.Render(synced)
		} else {
			synced = s.dim.Render(synced)
		}
	}
	var clock string
	if c := st.Clock(); !c.IsZero() {
		clock = s.dim.Render("clock " + signedMillis(c.Offset()) + " ±" + signedMillis(c.Uncertainty)[1:])
	}
	standby := m.standbySegment(h)
	ro, paused, badge := m.badges()
	return joinSegments([]segment{
		{s.title.Render(clean(m.cfg.Title, 20)), 0},
		{s.dim.Render(clean(m.cfg.Database, 40)), 2},
		{link, 0},
		{synced, 1},
		{m.renewalsSegment(h), 1},
		{standby, 2},
		{clock, 4},
		{badge, 3},
		{ro, 0},
		{paused, 0},
	}, m.width)
}

// renewalsSegment says how old the view of renewals may be, once the feed
// reads the lease table a slice a second (monitor.FeedConfig.SweepPages):
// a lease's countdown may then run up to that long behind a renewal it has
// not read yet. "" while every read reads the whole table.
func (m *Model) renewalsSegment(h monitor.Health) string {
	if h.RenewalsAge <= 0 {
		return ""
	}
	return m.styles.dim.Render("renewals ≤" + compact(h.RenewalsAge) + " old")
}

// badges are header line 1's read-only badge, pause badge and the embedding
// program's badge, each "" when there is none.
func (m *Model) badges() (ro, paused, badge string) {
	s := m.styles
	if m.cfg.ReadOnly {
		ro = s.badge.Render("[RO]")
	}
	if m.frozen != nil {
		n := m.state.Applied() - m.frozen.Applied()
		paused = s.pausedBadge.Render(fmt.Sprintf(" ⏸ PAUSED +%d events ", n))
	}
	if m.cfg.Badge != nil {
		badge = clean(m.cfg.Badge(), 40)
	}
	return ro, paused, badge
}

// linkText is the link state as the header shows it: LIVE, CONNECTING,
// POLL, NO ANSWER, RECONNECTING (attempt n) or DOWN.
func (m *Model) linkText(h monitor.Health) string {
	s := m.styles
	var link string
	switch {
	case h.Link == monitor.LinkLive:
		link = s.live.Render("● LIVE")
	case h.Link == monitor.LinkConnecting:
		link = s.warn.Render("◌ CONNECTING")
	case h.Link == monitor.LinkPoll:
		link = s.live.Render("◌ POLL " + h.Poll.String())
	case h.Link == monitor.LinkReconnecting && h.NoAnswer > 0:
		link = s.warn.Render("↻ NO ANSWER") // the reads wait; the listener has not noticed yet
	case h.Link == monitor.LinkReconnecting:
		link = s.warn.Render(fmt.Sprintf("↻ RECONNECTING (attempt %d)", max(h.Attempt, 1)))
	default:
		link = s.bad.Render("✖ DOWN")
		switch {
		case h.Attempt > 0:
			link = s.bad.Render(fmt.Sprintf("✖ DOWN (attempt %d)", h.Attempt))
		case h.NoAnswer > 0:
			link = s.bad.Render("✖ DOWN (no answer)")
		}
	}
	return link
}

// headerLine2: counts, rate, sort and filter, and the last error.
func (m *Model) headerLine2() string {
	s := m.styles
	c := m.counts
	count := func(n int, label string, st func(...string) string) string {
		text := fmt.Sprintf("%s %d", label, n)
		if n > 0 && st != nil {
			return st(text)
		}
		return text
	}
	segs := []segment{
		{count(c.Held, "held", nil), 0},
		{count(c.ExpiringSoon, "expiring", s.warn.Render), 0},
		{count(c.Expired, "expired", s.bad.Render), 0},
		{fmt.Sprintf("ev/s %.1f", m.state.EventsPerSecond(m.now)), 2},
		{s.dim.Render("sort ") + m.sortBy.String() + " " + sortArrow(m.sortBy), 1},
		{m.pulseSegment(), 5},
	}
	if m.filter != "" {
		segs = append(segs, segment{s.warn.Render("filter \"" + clean(m.filter, 20) + "\""), 0})
	}
	if n := m.state.Malformed(); n > 0 {
		segs = append(segs, segment{s.warn.Render(fmt.Sprintf("%d malformed notifications dropped", n)), 3})
	}
	if len(m.cfg.Contexts) > 0 {
		segs = append(segs, m.contextErrors()...)
		return joinSegments(segs, m.width)
	}
	h := m.state.Health(m.now)
	if h.Poll > 0 {
		segs = append(segs, segment{s.dim.Render("polling: " + clean(oneLine(h.PollReason.String()), 0)), 3})
	}
	if h.Err != nil {
		segs = append(segs, segment{s.bad.Render("error: " + clean(oneLine(h.Err.Error()), 0)), 0})
	}
	return joinSegments(segs, m.width)
}

// laggingAfter is the replay lag the header shows as a warning.
const laggingAfter = 10 * time.Second

// standbySegment says that the monitor reads a hot standby, and how far its
// replay lags (on the standby's clock; it grows while the primary commits
// nothing).
func (m *Model) standbySegment(h monitor.Health) string {
	s := m.styles
	switch {
	case !h.Standby:
		return ""
	case !h.LagKnown:
		return s.warn.Render("standby, nothing replayed yet")
	case h.ReplayLag > laggingAfter:
		return s.warn.Render("standby lag " + compact(h.ReplayLag))
	default:
		return s.dim.Render("standby lag " + compact(h.ReplayLag))
	}
}

func sortArrow(s sortMode) string {
	if s == sortHeld {
		return "▼"
	}
	return "▲"
}
