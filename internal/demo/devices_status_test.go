package demo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestDeviceStatusRoundTrip: a device's reports, folded into the status it
// writes and read back as the pane shows it: the row shows what it holds
// before what it was refused, its beliefs and counters, with times placed
// on the server's clock by reported_at.
func TestDeviceStatusRoundTrip(t *testing.T) {
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
	doc, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	reported := t0.Add(time.Hour) // the server's clock is an hour ahead of the device's
	d, err := processRow{account: "acme", name: "phone", pid: 7, generation: 1, startedAt: t0, status: doc, reportedAt: &reported}.device()
	if err != nil {
		t.Fatal(err)
	}
	want := monitor.Device{Account: "acme", Name: "phone", PID: 7, Holder: "phone pid 7", State: monitor.DeviceHolding,
		Since: reported.Add(-690 * time.Millisecond), Key: data.Key{Account: "acme", Session: "chat-2"}, Run: run, Fence: 12,
		Believes: []monitor.Belief{{Key: data.Key{Account: "acme", Session: "chat-2"}, Run: run, Fence: 12, Since: reported.Add(-690 * time.Millisecond)}},
		Runs:     1, Refusals: 1, WritesAccepted: 1, WritesRefused: 1, Reported: reported}
	if !equalDevices(d, want) {
		t.Errorf("read back as\n%+v\nwant\n%+v", d, want)
	}

	tr.apply(Report{Kind: ReportEnded, Session: "chat-2", Run: run, Fence: 12, How: EndLost, Cause: "taken over"}, t0.Add(1100*time.Millisecond))
	st, _ = tr.status(t0.Add(1200 * time.Millisecond))
	doc, _ = json.Marshal(st)
	d, _ = processRow{account: "acme", name: "phone", pid: 7, generation: 1, startedAt: t0, status: doc, reportedAt: &reported}.device()
	if d.State != monitor.DeviceLost || d.Why != "taken over" || len(d.Believes) != 0 {
		t.Errorf("after the loss: state %s why %q believes %v; want lost, taken over, nothing", d.State, d.Why, d.Believes)
	}
	frozen, at := "frozen", reported.Add(time.Second)
	d, _ = processRow{account: "acme", name: "phone", pid: 7, generation: 2, startedAt: t0, status: doc, reportedAt: &reported,
		signal: &frozen, signalAt: &at}.device()
	if d.State != monitor.DeviceFrozen || !d.Since.Equal(at) {
		t.Errorf("with the demo's frozen signal: state %s since %v; want frozen since %v", d.State, d.Since, at)
	}
	d, _ = processRow{account: "acme", name: "phone", pid: 8, generation: 2, startedAt: t0}.device()
	if d.State != monitor.DeviceRestarting {
		t.Errorf("a second process that has not reported: state %s, want restarting", d.State)
	}
}

func equalDevices(a, b monitor.Device) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
