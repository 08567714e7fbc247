package device

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The statuses TestDeviceStatus folds its reports into, as the device
// writes them: internal/demo's TestDeviceStatusReadBack reads the same two
// documents back as the pane shows them.
const (
	statusAfterWrites = `{"holder":"phone pid 7","sessions":[{"session":"chat-1","state":"refused","age":890000000,"owner":"desktop pid 3","owner_left":1110000000},{"session":"chat-2","state":"holding","age":690000000,"run":"0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f","fence":12}],"runs":1,"refusals":1,"writes_accepted":1,"writes_refused":1}`
	statusAfterLoss   = `{"holder":"phone pid 7","sessions":[{"session":"chat-1","state":"refused","age":1090000000,"owner":"desktop pid 3","owner_left":910000000},{"session":"chat-2","state":"lost","age":100000000,"run":"0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f","fence":12,"why":"taken over"}],"runs":1,"refusals":1,"writes_accepted":1,"writes_refused":1}`
)

// TestDeviceStatus: a device's reports, folded into the status it writes:
// what it holds, what it was refused, its counters, ages as of the write,
// and each attempt logged once.
func TestDeviceStatus(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run := uuid.MustParse("0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f")
	tr := newTracker("phone pid 7", []string{"chat-1", "chat-2"}, t0)
	steps := []struct {
		at time.Duration
		r  Report
	}{
		{100 * time.Millisecond, Report{Kind: ReportTrying, Session: "chat-1"}},
		{110 * time.Millisecond, Report{Kind: ReportRefused, Session: "chat-1", Holder: "desktop pid 3", Remaining: 2 * time.Second}},
		{300 * time.Millisecond, Report{Kind: ReportTrying, Session: "chat-2"}},
		{310 * time.Millisecond, Report{Kind: ReportStarted, Session: "chat-2", Run: run, Fence: 12}},
		{500 * time.Millisecond, Report{Kind: ReportWrite, Session: "chat-2", Run: run, Fence: 12, Accepted: true}},
		{700 * time.Millisecond, Report{Kind: ReportWrite, Session: "chat-2", Run: run, Fence: 12}},
	}
	for _, s := range steps {
		tr.apply(s.r, t0.Add(s.at))
	}
	st, attempts := tr.status(t0.Add(time.Second))
	if got := len(attempts); got != 4 {
		t.Errorf("%d attempts logged, want 4 (refused, granted, two writes)", got)
	}
	if a := attempts[1]; a.action != "acquire" || !a.ok || a.answer != "granted: fence 12" || a.run != run {
		t.Errorf("the grant is logged as %+v", a)
	}
	if a := attempts[0]; a.ok || !strings.Contains(a.answer, "busy: desktop pid 3 has it, 2s left") {
		t.Errorf("the refusal is logged as %+v", a)
	}
	if _, again := tr.status(t0.Add(time.Second)); len(again) != 0 {
		t.Errorf("the attempts are handed out twice: %d", len(again))
	}
	if doc, _ := json.Marshal(st); string(doc) != statusAfterWrites {
		t.Errorf("status after the writes:\n%s\nwant\n%s", doc, statusAfterWrites)
	}
	tr.apply(Report{Kind: ReportEnded, Session: "chat-2", Run: run, Fence: 12, How: EndLost, Cause: "taken over"}, t0.Add(1100*time.Millisecond))
	st, _ = tr.status(t0.Add(1200 * time.Millisecond))
	if doc, _ := json.Marshal(st); string(doc) != statusAfterLoss {
		t.Errorf("status after the loss:\n%s\nwant\n%s", doc, statusAfterLoss)
	}
}
