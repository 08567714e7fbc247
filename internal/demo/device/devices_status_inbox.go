package device

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// SentStatus is the last message a device sent, in its Status: where it
// is, with Age how long it has been there.
type SentStatus struct {
	Session string            `json:"session"`
	Kind    lease.MessageKind `json:"kind"`
	ID      int64             `json:"id"`
	To      string            `json:"to,omitempty"`
	Where   data.MessageState `json:"where"`
	Run     uuid.UUID         `json:"run,omitzero"`
	Fence   int64             `json:"fence,omitempty"`
	Carried bool              `json:"carried,omitempty"`
	Age     time.Duration     `json:"age"`
}

// sentState is SentStatus on the local clock.
type sentState struct {
	SentStatus
	since time.Time
}

// applyInbox folds in a report of the account limits and the inbox (a
// refusal or a wait for the account, a message sent, where it landed, one
// received, acknowledged, a run cancelled) and reports whether r was one.
func (t *tracker) applyInbox(r Report, s *sessionState, set func(sessionState), log func(string, bool, string, ...any), now time.Time) bool {
	switch {
	case r.Kind == ReportRefused && r.Slots > 0:
		t.counts.Refusals++
		set(sessionState{state: monitor.DeviceRefused, slots: r.Slots, used: r.Used})
		log("acquire", false, "account at its limit: %d of %d live runs", r.Used, r.Slots)
	case r.Kind == ReportWaiting && r.Slots > 0:
		set(sessionState{state: monitor.DeviceWaiting, slots: r.Slots, used: r.Used})
	case r.Kind == ReportSent:
		t.sent = &sentState{SentStatus: SentStatus{Session: r.Session, Kind: r.Message, ID: r.MessageID, To: r.Holder,
			Where: lease.MessageWaiting}, since: now}
		log("send", true, "busy: sent a %s to %s's run %s (message %d)", r.Message, r.Holder, shortID(r.OwnerRun), r.MessageID)
	case r.Kind == ReportLanded:
		if t.sent != nil && t.sent.ID == r.MessageID {
			t.sent.Where, t.sent.Run, t.sent.Fence, t.sent.Carried, t.sent.since = data.MessageState(r.How), r.Run, r.Fence, r.Carried, now
		}
		carried := ""
		if r.Carried {
			carried = ", carried to the next run"
		}
		log("send", r.How != string(lease.MessageExpired), "message %d %s: run %s fence %d%s", r.MessageID, r.How, shortID(r.Run), r.Fence, carried)
	case r.Kind == ReportReceived:
		from := ""
		if r.OwnerRun != uuid.Nil {
			from = ", carried from run " + shortID(r.OwnerRun)
		}
		log("receive", true, "a %s from %s (message %d)%s", r.Message, r.Holder, r.MessageID, from)
	case r.Kind == ReportAcked:
		log("ack", true, "acknowledged %s %d from %s at fence %d", r.Message, r.MessageID, r.Holder, r.Fence)
	case r.Kind == ReportEnded && r.Cancelled:
		set(sessionState{state: monitor.DeviceCancelled, run: r.Run, fence: r.Fence, owner: r.Holder})
		log("release", true, "cancelled by %s: stopped and released", r.Holder)
	default:
		return false
	}
	return true
}
