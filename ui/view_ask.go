package ui

import (
	"fmt"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/leasetop/leasetop/internal/data"
)

// describeHandover is describe for the hand-over kinds (sql/handover.sql):
// RunID is the asker, PrevRunID the holder asked.
func (m *Model) describeHandover(ev data.Event) (string, string, *lipgloss.Style, bool) {
	s := &m.styles
	asker := "run " + shortRun(ev.RunID)
	if ev.Holder != "" {
		asker += " (" + idText(ev.Holder, 24) + ")"
	}
	switch ev.Kind {
	case data.KindHandoverAsked:
		d := fmt.Sprintf("%s asks run %s to hand over", asker, shortRun(ev.PrevRunID))
		if !ev.ExpiresAt.IsZero() {
			d += " · within " + compact(ev.ExpiresAt.Sub(ev.At))
		}
		return "asked", d, nil, true
	case data.KindHandedOver:
		d := fmt.Sprintf("run %s→%s fence %d→%d", shortRun(ev.PrevRunID), shortRun(ev.RunID), ev.PrevFence, ev.Fence)
		if ev.PrevHolder != "" || ev.Holder != "" {
			d += " · " + holdersText(ev)
		}
		return "handed over", d, &s.takeover, true
	case data.KindHandoverDeclined:
		return "declined", fmt.Sprintf("run %s declined %s", shortRun(ev.PrevRunID), asker), nil, true
	case data.KindHandoverExpired:
		d := asker + "'s ask ended"
		if ev.Reason != "" {
			d += ": " + clean(ev.Reason, 40)
		}
		return "ask expired", d, nil, true
	}
	return "", "", nil, false
}

// pendingAsk finds the ask to hand over still pending for the holder run
// in a session's history (newest first): the newest hand-over event is an
// ask addressed to run whose deadline has not passed at now.
func pendingAsk(history []data.Event, l data.Lease, now time.Time) (data.Event, bool) {
	for _, e := range history {
		switch e.Kind {
		case data.KindHandoverAsked:
			return e, e.PrevRunID == l.RunID && e.ExpiresAt.After(now)
		case data.KindHandedOver, data.KindHandoverDeclined, data.KindHandoverExpired:
			return data.Event{}, false
		}
	}
	return data.Event{}, false
}

// askLines shows the detail view's pending ask: who asked, until when.
func (m *Model) askLines(field func(name, value string), l data.Lease, now time.Time) {
	if m.detail == nil {
		return
	}
	a, ok := pendingAsk(m.detail.history, l, now)
	if !ok {
		return
	}
	who := "run " + a.RunID.String()
	if a.Holder != "" {
		who += " (" + m.exactText(a.Holder) + ")"
	}
	field("asked by", m.styles.warn.Render(who))
	field("ask until", m.stamp(a.ExpiresAt)+"  "+m.styles.warn.Render("in "+compact(a.ExpiresAt.Sub(now))))
}
