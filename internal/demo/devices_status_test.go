package demo

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The statuses a device writes after TestDeviceStatus's reports (package
// device pins the same two documents).
const (
	statusAfterWrites = `{"holder":"phone pid 7","sessions":[{"session":"chat-1","state":"refused","age":890000000,"owner":"desktop pid 3","owner_left":1110000000},{"session":"chat-2","state":"holding","age":690000000,"run":"0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f","fence":12}],"runs":1,"refusals":1,"writes_accepted":1,"writes_refused":1}`
	statusAfterLoss   = `{"holder":"phone pid 7","sessions":[{"session":"chat-1","state":"refused","age":1090000000,"owner":"desktop pid 3","owner_left":910000000},{"session":"chat-2","state":"lost","age":100000000,"run":"0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f","fence":12,"why":"taken over"}],"runs":1,"refusals":1,"writes_accepted":1,"writes_refused":1}`
)

// TestDeviceStatusReadBack: a device's status read back as the pane shows
// it: the row shows what it holds before what it was refused, its beliefs
// and counters, with times placed on the server's clock by reported_at; the
// demo's own signals (frozen) and a restarted process that has not
// reported yet.
func TestDeviceStatusReadBack(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run := uuid.MustParse("0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f")
	doc := []byte(statusAfterWrites)
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

	doc = []byte(statusAfterLoss)
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
