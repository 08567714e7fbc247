package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/monitor"
)

// A monitor of several databases (Config.Contexts) shows each context's
// link in a line of its own under the first: its name in its colour, its
// link (LIVE, POLL, RECONNECTING, DOWN), how long since it was last read,
// a standby's replay lag, a clock more than a second away from this
// machine's, and its mode ([RO] read-only, [PROTECTED]). A context that
// goes down says so there while the others keep their rows up to date;
// its rows stay as last read (the table's CONTEXT column names it).

// contextName renders a context's name in its colour.
func (m *Model) contextName(c Context) string {
	st := lipgloss.NewStyle().Bold(true)
	if c.Color != "" {
		st = st.Foreground(lipgloss.Color(c.Color))
	}
	return st.Render(clean(c.Name, 0))
}

// contextsSummary is header line 1 of a monitor of several databases: the
// title, how many contexts are live and how many are not, the badges.
func (m *Model) contextsSummary() string {
	s := m.styles
	live, down := 0, 0
	for i := range m.cfg.Contexts {
		switch m.state.HealthOf(i, m.now).Link {
		case monitor.LinkLive, monitor.LinkPoll:
			live++
		default:
			down++
		}
	}
	summary := s.live.Render(fmt.Sprintf("● %d live", live))
	if down > 0 {
		summary += " " + s.bad.Render(fmt.Sprintf("✖ %d not", down))
	}
	ro, paused, badge := m.badges()
	return joinSegments([]segment{
		{s.title.Render(clean(m.cfg.Title, 20)), 0},
		{s.dim.Render(fmt.Sprintf("%d contexts", len(m.cfg.Contexts))), 2},
		{summary, 0},
		{badge, 3},
		{ro, 0},
		{paused, 0},
	}, m.width)
}

// contextsLine is every context's link, each in as much detail as the
// width leaves room for.
func (m *Model) contextsLine() string {
	for detail := 2; detail > 0; detail-- {
		parts := make([]string, len(m.cfg.Contexts))
		for i, c := range m.cfg.Contexts {
			parts[i] = m.contextState(i, c, detail)
		}
		if line := strings.Join(parts, "  "); ansi.StringWidth(line) <= m.width {
			return line
		}
	}
	parts := make([]string, len(m.cfg.Contexts))
	for i, c := range m.cfg.Contexts {
		parts[i] = m.contextState(i, c, 0)
	}
	return fit(strings.Join(parts, " "), m.width)
}

// contextState is context i's part of the contexts' line: with detail 0 its
// name and the link's mark, 1 adds the link's word and the mode, 2 the
// time since its last read, a standby's lag and a clock that is off.
func (m *Model) contextState(i int, c Context, detail int) string {
	s := m.styles
	h := m.state.HealthOf(i, m.now)
	link := m.linkText(h)
	if detail == 0 {
		glyph, _, _ := strings.Cut(ansi.Strip(link), " ")
		return m.contextName(c) + " " + glyph
	}
	parts := []string{m.contextName(c), link}
	if detail == 2 {
		if h.SyncedAgo > 0 || !h.Stale {
			ago := compact(h.SyncedAgo)
			if h.Stale {
				parts = append(parts, s.bad.Render("synced "+ago+" ago"))
			} else {
				parts = append(parts, s.dim.Render(ago))
			}
		}
		if sb := m.standbySegment(h); sb != "" {
			parts = append(parts, sb)
		}
		if r := m.renewalsSegment(h); r != "" {
			parts = append(parts, r)
		}
		if off := h.Clock.Offset(); !h.Clock.IsZero() && (off > clockOff || off < -clockOff) {
			parts = append(parts, s.warn.Render("clock "+signedMillis(off)))
		}
	}
	switch {
	case c.ReadOnly || m.cfg.ReadOnly:
		parts = append(parts, s.badge.Render("[RO]"))
	case c.Protected:
		parts = append(parts, s.badge.Render("[PROTECTED]"))
	}
	return strings.Join(parts, " ")
}

// clockOff is how far a context's server clock may be from this machine's
// before the contexts' line says so: its leases' countdowns are on this
// machine's clock (monitor.State), so they stay true, but its events' times
// are its server's.
const clockOff = time.Second

// contextErrors are the counts line's segments of the contexts' errors: the
// first one's stays, the others go first when the line is full.
func (m *Model) contextErrors() []segment {
	var segs []segment
	for i, c := range m.cfg.Contexts {
		if h := m.state.HealthOf(i, m.now); h.Err != nil {
			segs = append(segs, segment{m.styles.bad.Render(clean(c.Name, 0) + ": " + clean(oneLine(h.Err.Error()), 0)), min(len(segs), 1) * 4})
		}
	}
	return segs
}
