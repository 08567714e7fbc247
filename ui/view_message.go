package ui

import (
	"fmt"

	"charm.land/lipgloss/v2"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// describeMessage is describe for the inbox's kinds (sql/inbox.sql): the
// message (MessageID), its kind (Reason) and sender (Holder), the run it
// went to (RunID) and the one it was carried from (PrevRunID).
func (m *Model) describeMessage(ev data.Event) (string, string, *lipgloss.Style, bool) {
	if !ev.Kind.Message() {
		return "", "", nil, false
	}
	msg := fmt.Sprintf("%s %d", clean(ev.Reason, 8), ev.MessageID)
	if ev.Holder != "" {
		msg += " from " + idText(ev.Holder, 24)
	}
	switch ev.Kind {
	case data.KindMessageSent:
		if ev.RunID == uuid.Nil { // nobody held the conversation
			return "msg sent", msg + " · waiting for a run", nil, true
		}
		return "msg sent", msg + " · run " + shortRun(ev.RunID) + " holds it", nil, true
	case data.KindMessageDelivered:
		return "msg delivered", fmt.Sprintf("%s → run %s fence %d", msg, shortRun(ev.RunID), ev.Fence), nil, true
	case data.KindMessageCarried:
		return "msg carried", fmt.Sprintf("%s run %s→%s fence %d→%d", msg, shortRun(ev.PrevRunID), shortRun(ev.RunID), ev.PrevFence, ev.Fence), nil, true
	case data.KindMessageAcked:
		return "msg acked", fmt.Sprintf("%s by run %s fence %d", msg, shortRun(ev.RunID), ev.Fence), nil, true
	}
	d := msg + " · unacknowledged"
	if ev.Fence != 0 {
		d += fmt.Sprintf(", last delivered to run %s", shortRun(ev.RunID))
	}
	return "msg expired", d, &m.styles.warn, true
}
