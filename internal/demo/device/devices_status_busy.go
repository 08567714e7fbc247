package device

import (
	"time"

	"github.com/leasetop/leasetop/monitor"
)

// applyBusy folds in a report of the busy strategies (preempt, join, queue,
// ask) and reports whether r was one; set replaces the conversation's
// state, log adds an attempt (see apply).
func (t *tracker) applyBusy(r Report, s *sessionState, set func(sessionState), log func(string, bool, string, ...any), now time.Time) bool {
	switch r.Kind {
	case ReportPreempting:
		set(sessionState{state: monitor.DevicePreempting, owner: r.Holder})
	case ReportPreemptRefused:
		t.counts.Refusals++
		set(sessionState{state: monitor.DeviceRefused, owner: r.Holder, ownerUntil: now.Add(r.Remaining), why: "paying"})
		log("preempt", false, "refused: %s is paying (not preemptible), %s left", r.Holder, r.Remaining.Round(100*time.Millisecond))
	case ReportFollowing:
		t.counts.Joins++
		set(sessionState{state: monitor.DeviceFollowing, owner: r.Holder, run: r.OwnerRun, fence: r.Fence, attachment: r.Attachment})
		log("join", true, "busy: following %s's run (stream %s)", r.Holder, r.Attachment)
	case ReportQueued:
		if s.state != monitor.DeviceQueued {
			t.counts.QueueWaits++
			set(sessionState{state: monitor.DeviceQueued, owner: r.Holder, place: r.Place, why: r.Cause})
			log("queue", true, "busy: %s has it; took a ticket, place %d", r.Holder, r.Place)
		} else {
			s.place = r.Place // the same wait, a new place
		}
	case ReportAsking:
		set(sessionState{state: monitor.DeviceAsking, owner: r.Holder, ownerUntil: now.Add(r.Remaining)})
		log("ask", true, "busy: asked %s to hand over, %s to answer", r.Holder, r.Remaining.Round(100*time.Millisecond))
	case ReportAskEnded:
		if r.How != EndHandedOver {
			log("ask", false, "%s after %s; falls back to %s", r.How, r.Waited.Round(100*time.Millisecond), FallbackText(r.Strategy))
		}
	case ReportAnswered:
		log("answer", r.How == "declined", "%s asked for run %s: %s%s", r.Holder, shortID(r.Run), r.How, errSuffix(r.Err))
	case ReportUnfollowed:
		set(sessionState{state: monitor.DeviceIdle})
	case ReportGaveUp:
		set(sessionState{state: monitor.DeviceIdle})
		if r.Queued {
			log("queue", false, "not its turn after %s: its user gave up (ticket cancelled)", r.Waited.Round(100*time.Millisecond))
			break
		}
		log("wait", false, "still held after %s: its user gave up", r.Waited.Round(100*time.Millisecond))
	default:
		return false
	}
	return true
}
