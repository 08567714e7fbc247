package device

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// TestDeviceStatusLimitsAndMessages: a refusal at the account's limit and
// the wait that follows keep the slots in the conversation's status; a
// message sent follows where it lands into Sent (carried, then acked); a
// run cancelled by a message shows who cancelled it; each is logged.
func TestDeviceStatusLimitsAndMessages(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sentTo, next := uuid.New(), uuid.New()
	tr := newTracker("phone pid 7", []string{"chat-1", "chat-2"}, t0)
	for i, r := range []Report{
		{Kind: ReportRefused, Session: "chat-1", Slots: 1, Used: 1},
		{Kind: ReportWaiting, Session: "chat-1", Slots: 1, Used: 1},
		{Kind: ReportSent, Session: "chat-2", Message: lease.SteerMessage, MessageID: 4, Holder: "desktop pid 3", OwnerRun: sentTo},
		{Kind: ReportLanded, Session: "chat-2", MessageID: 4, How: string(lease.MessageDelivered), Run: next, Fence: 9, Carried: true},
		{Kind: ReportLanded, Session: "chat-2", MessageID: 4, How: string(lease.MessageAcked), Run: next, Fence: 9, Carried: true},
	} {
		tr.apply(r, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	st, attempts := tr.status(t0.Add(time.Second))
	if s := st.Sessions[0]; s.State != monitor.DeviceWaiting || s.Slots != 1 || s.Used != 1 || s.Owner != "" {
		t.Errorf("chat-1's status = %+v; want waiting for its account, 1 of 1 slots", s)
	}
	if st.Refusals != 1 {
		t.Errorf("refusals = %d, want 1", st.Refusals)
	}
	want := SentStatus{Session: "chat-2", Kind: lease.SteerMessage, ID: 4, To: "desktop pid 3", Where: data.MessageAcked, Run: next, Fence: 9,
		Carried: true, Age: 600 * time.Millisecond}
	if st.Sent == nil || *st.Sent != want {
		t.Errorf("Sent = %+v, want %+v", st.Sent, want)
	}
	if len(attempts) != 4 || !strings.Contains(attempts[0].answer, "account at its limit: 1 of 1") ||
		!strings.Contains(attempts[2].answer, "carried to the next run") {
		t.Errorf("attempts = %+v; want the refusal at the limit, the send, the carry and the ack", attempts)
	}
	run := uuid.New()
	tr.apply(Report{Kind: ReportStarted, Session: "chat-2", Run: run, Fence: 11}, t0.Add(1100*time.Millisecond))
	tr.apply(Report{Kind: ReportEnded, Session: "chat-2", Run: run, Fence: 11, How: EndReleased, Cancelled: true, Holder: "browser pid 5"},
		t0.Add(1200*time.Millisecond))
	st, _ = tr.status(t0.Add(1300 * time.Millisecond))
	if s := st.Sessions[1]; s.State != monitor.DeviceCancelled || s.Owner != "browser pid 5" || s.Run != run {
		t.Errorf("chat-2's status = %+v; want cancelled by browser pid 5, run %s", s, run)
	}
}
