package device_test

import (
	"context"
	"encoding/json"
	"github.com/leasetop/leasetop/internal/demo/device"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// statusWire is a device's status as it travels from a device process to
// the monitor through leasetop_demo.device.status, with a conversation in
// each state a device writes: a device and a supervisor from different
// builds exchange exactly this.
const statusWire = `{"holder":"phone pid 7","sessions":[` +
	`{"session":"chat-1","state":"holding","age":1500000000,"run":"0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f","fence":12},` +
	`{"session":"chat-2","state":"refused","age":200000000,"owner":"desktop pid 3","owner_left":2000000000},` +
	`{"session":"chat-3","state":"waiting","age":300000000,"owner":"desktop pid 3"},` +
	`{"session":"chat-4","state":"trying","age":0},` +
	`{"session":"chat-5","state":"lost","age":100000000,"run":"0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e70","fence":9,"why":"taken over"},` +
	`{"session":"chat-6","state":"idle","age":4000000000}],` +
	`"runs":3,"refusals":1,"writes_accepted":4,"writes_refused":2}`

// TestDeviceStatusWireFormat: the status a device writes is statusWire
// byte for byte (its field names and the words of its states are the
// contract with the reader, wherever their types live), it reads back as
// the same status, and the monitor's read of it through the database
// places it on the server's clock with what the device believes it holds.
func TestDeviceStatusWireFormat(t *testing.T) {
	t.Parallel()
	run := uuid.MustParse("0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e6f")
	lostRun := uuid.MustParse("0d6f6c1e-7a4b-4c1d-9a2e-1f2b3c4d5e70")
	st := device.Status{
		Holder: "phone pid 7",
		Sessions: []device.SessionStatus{
			{Session: "chat-1", State: monitor.DeviceHolding, Age: 1500 * time.Millisecond, Run: run, Fence: 12},
			{Session: "chat-2", State: monitor.DeviceRefused, Age: 200 * time.Millisecond, Owner: "desktop pid 3", OwnerLeft: 2 * time.Second},
			{Session: "chat-3", State: monitor.DeviceWaiting, Age: 300 * time.Millisecond, Owner: "desktop pid 3"},
			{Session: "chat-4", State: monitor.DeviceTrying},
			{Session: "chat-5", State: monitor.DeviceLost, Age: 100 * time.Millisecond, Run: lostRun, Fence: 9, Why: "taken over"},
			{Session: "chat-6", State: monitor.DeviceIdle, Age: 4 * time.Second},
		},
		Runs: 3, Refusals: 1, WritesAccepted: 4, WritesRefused: 2,
	}
	got, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != statusWire {
		t.Errorf("the status is written as\n%s\nwant\n%s", got, statusWire)
	}
	var back device.Status
	if err := json.Unmarshal([]byte(statusWire), &back); err != nil {
		t.Fatalf("Unmarshal(statusWire): %v", err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Errorf("statusWire reads back as\n%+v\nwant\n%+v", back, st)
	}

	ctx := context.Background()
	store := pgtest.New(t).Store(t)
	if _, err := demo.Setup(ctx, store); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, device.UpsertDevice, "acme", "phone", 7, []byte(statusWire)); err != nil {
		t.Fatalf("write the status: %v", err)
	}
	devs, err := demo.ReadDevices(ctx, store, []string{"acme"}, false)
	if err != nil || len(devs) != 1 {
		t.Fatalf("ReadDevices = %d devices, %v; want 1", len(devs), err)
	}
	d := devs[0]
	key := data.Key{Account: "acme", Session: "chat-1"}
	since := d.Reported.Add(-1500 * time.Millisecond)
	want := monitor.Device{Account: "acme", Name: "phone", PID: 7, Holder: "phone pid 7", State: monitor.DeviceHolding,
		Since: since, Key: key, Run: run, Fence: 12,
		Believes: []monitor.Belief{{Key: key, Run: run, Fence: 12, Since: since}},
		Runs:     3, Refusals: 1, WritesAccepted: 4, WritesRefused: 2, Reported: d.Reported}
	if d.Reported.IsZero() || !reflect.DeepEqual(d, want) {
		t.Errorf("read back through the database as\n%+v\nwant\n%+v", d, want)
	}
}
