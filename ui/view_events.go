package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// viewEvents is the events pane: a title and the newest events first. It
// is rendered again only when the events, its cursor or the size changed.
func (m *Model) viewEvents(lay layout) []string {
	shown := m.shown()
	key := eventsEntry{of: shown, version: shown.Version(), filter: m.filter, focus: m.focus, cur: m.evCur, off: m.evOf,
		rows: lay.eventRows, width: m.width}
	if !m.cache.events.matches(key) {
		m.cache.eventRenders++
		key.ok, key.lines = true, m.renderEvents(m.events(), lay)
		m.cache.events = key
	}
	return m.cache.events.lines
}

// renderEvents renders the events pane.
func (m *Model) renderEvents(evs []data.Event, lay layout) []string {
	s := m.styles
	title := "EVENTS newest first"
	if m.focus == focusEvents {
		title = "▶ " + title + " (focused: ↑/↓ select, enter details, tab back)"
	} else {
		title = "─ " + title
	}
	if len(evs) > lay.eventRows {
		title += fmt.Sprintf("  %d-%d/%d", m.evOf+1, min(m.evOf+lay.eventRows, len(evs)), len(evs))
	}
	rule := strings.Repeat("─", max(m.width-len([]rune(title))-1, 0))
	lines := []string{s.paneTitle.Render(title) + " " + s.dim.Render(rule)}
	switch {
	case len(evs) == 0 && m.filter != "" && len(m.shown().Events()) > 0:
		return append(lines, "  "+s.dim.Render(fmt.Sprintf("no event matches %q (%s clears the filter)", clean(m.filter, 20), m.keys.Back.Help().Key)))
	case len(evs) == 0:
		return append(lines, "  "+s.dim.Render("no events yet"))
	}
	// The account/session column is as wide as the widest key shown, at
	// most keyWidth, so that what happened stays next to where it happened.
	shown := evs[m.evOf:min(m.evOf+lay.eventRows, len(evs))]
	keys, keyW := make([]string, len(shown)), 0
	for i, ev := range shown {
		keys[i] = eventKeyText(ev, 24)
		keyW = max(keyW, ansi.StringWidth(keys[i]))
	}
	keyW = min(keyW, m.keyWidth())
	for i, ev := range shown {
		selected := m.focus == focusEvents && m.evOf+i == m.evCur
		lines = append(lines, m.eventLine(ev, selected, pad(keys[i], keyW), "15:04:05"))
	}
	return lines
}

// eventKeyText is where ev happened: account/session, or the account alone
// for an event of a whole account (limit_set, limit_removed).
func eventKeyText(ev data.Event, width int) string {
	k := monitor.EventKey(ev)
	if k.Session == "" && k.Account != "" {
		text := idText(k.Account, width)
		if k.Context != "" {
			text = clean(k.Context, 0) + ":" + text
		}
		return text
	}
	return keyText(k, width)
}

// eventLine is one event: time, kind, the session's column key (none when
// empty) and what happened.
func (m *Model) eventLine(ev data.Event, selected bool, key, layout string) string {
	marker := "  "
	if selected {
		marker = "▶ "
	}
	at := ev.At.In(m.cfg.Location).Format(layout)
	label, detail, style := m.describe(ev)
	line := at + " " + pad(label, 14)
	if key != "" {
		line += " " + key
	}
	line += " " + detail
	if selected {
		return m.styles.selected.Render(pad(marker+line, m.width))
	}
	if style != nil {
		line = style.Render(fit(line, m.width-2))
	}
	return marker + line
}

// keyWidth is the room for account/session in an event line.
func (m *Model) keyWidth() int {
	return min(max(m.width/5, 12), 40)
}

// describe returns an event's label, its details (safe text) and its style.
func (m *Model) describe(ev data.Event) (string, string, *lipgloss.Style) {
	s := &m.styles
	run := "run " + shortRun(ev.RunID)
	holder := ""
	if ev.Holder != "" {
		holder = " · " + idText(ev.Holder, 24)
	}
	switch ev.Kind {
	case data.KindAcquired:
		return "acquired", fmt.Sprintf("%s fence %d%s%s", run, ev.Fence, slotText(ev), holder), nil
	case data.KindTakenOver:
		d := fmt.Sprintf("run %s→%s fence %d→%d%s", shortRun(ev.PrevRunID), shortRun(ev.RunID), ev.PrevFence, ev.Fence, slotText(ev))
		if !ev.PrevExpiresAt.IsZero() {
			d += " · " + compact(ev.At.Sub(ev.PrevExpiresAt)) + " after expiry"
		}
		return "taken over", d, &s.takeover
	case data.KindPreempted:
		d := fmt.Sprintf("run %s→%s fence %d→%d by %s", shortRun(ev.PrevRunID), shortRun(ev.RunID), ev.PrevFence, ev.Fence, clean(ev.Actor, 24))
		if ev.PrevHolder != "" || ev.Holder != "" {
			d += " · " + holdersText(ev)
		}
		if ev.Reason != "" {
			d += ": " + clean(ev.Reason, 60)
		}
		return "preempted", d, &s.forced
	case data.KindReleased:
		return "released", fmt.Sprintf("%s fence %d", run, ev.Fence), &s.released
	case data.KindForceReleased:
		d := fmt.Sprintf("%s by %s", run, clean(ev.Actor, 24))
		if ev.Reason != "" {
			d += ": " + clean(ev.Reason, 60)
		}
		return "force released", d, &s.forced
	case data.KindRenewRejected:
		return "renew rejected", "zombie " + run + " renewing; " + rejectReason(ev.Reason), &s.zombie
	case data.KindTruncated:
		return "truncated", "the lease table was truncated: resyncing", &s.bad
	case data.KindQueueJoined:
		return "queued", run + " took a ticket" + holder, nil
	case data.KindQueueLeft:
		if why, ok := strings.CutPrefix(ev.Reason, "cleared"); ok { // an operator's clear_queue
			d := run + " cleared by " + clean(ev.Actor, 24)
			if why = strings.TrimPrefix(why, ": "); why != "" {
				d += ": " + clean(why, 60)
			}
			return "left queue", d + holder, &s.forced
		}
		return "left queue", run + " " + clean(ev.Reason, 12) + holder, nil
	}
	if label, d, st, ok := m.describeHandover(ev); ok {
		return label, d, st
	}
	if label, d, st, ok := m.describeLimit(ev, run, holder); ok {
		return label, d, st
	}
	if label, d, st, ok := m.describeMessage(ev); ok {
		return label, d, st
	}
	return clean(string(ev.Kind), 14), "", nil
}

// describeLimit describes the limits' events (sql/limits.sql): an
// operator's limit_set and limit_removed, whose reason says the pool and the
// slots ("pool deep-research: 3 slots", "no limit"), and a run's
// limit_refused, whose reason says which limit was full.
func (m *Model) describeLimit(ev data.Event, run, holder string) (string, string, *lipgloss.Style, bool) {
	switch ev.Kind {
	case data.KindLimitSet:
		return "limit set", clean(ev.Reason, 60) + " by " + clean(ev.Actor, 24), &m.styles.forced, true
	case data.KindLimitRemoved:
		return "limit removed", clean(ev.Reason, 60) + " by " + clean(ev.Actor, 24), &m.styles.forced, true
	case data.KindLimitRefused:
		return "limit refused", run + " refused: " + clean(ev.Reason, 60) + holder, &m.styles.takeover, true
	}
	return "", "", nil, false
}

// slotText is the slots a grant took in a limited account, from its
// event's reason (" slot 2", " slot 2, deep-research slot 1"), or "".
func slotText(ev data.Event) string {
	if ev.Reason == "" {
		return ""
	}
	return " " + clean(ev.Reason, 40)
}

// holdersText is the labels of the run an event replaced and of the run
// that replaced it: "desktop→phone" (either may be empty: not recorded).
func holdersText(ev data.Event) string {
	return idText(ev.PrevHolder, 24) + "→" + idText(ev.Holder, 24)
}

// rejectReason shortens lease.renew's reason ("held by run <uuid>").
func rejectReason(reason string) string {
	if rest, ok := strings.CutPrefix(reason, "held by run "); ok {
		if u, err := uuid.Parse(rest); err == nil {
			return "held by run " + shortRun(u)
		}
	}
	if reason == "" {
		return "no lease"
	}
	return clean(reason, 40)
}
