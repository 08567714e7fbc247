package ui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/keymap"
	"github.com/leasetop/leasetop/monitor"
)

// TestBelieves: what a device believes beside what the server says. A
// disagreement is a mismatch (✗) only when the device cannot simply not
// have reported yet.
func TestBelieves(t *testing.T) {
	ago := func(d time.Duration) time.Time { return server.Add(-d) }
	k := devKey("acme", "chat-1")
	mine := mkLease("acme", "chat-1", "desktop pid 1", run(1), 5, 2*time.Second, time.Second, 4*time.Second)
	expired := mkLease("acme", "chat-1", "desktop pid 1", run(1), 5, 9*time.Second, 5*time.Second, 4*time.Second)
	theirs := mkLease("acme", "chat-1", "phone pid 2", run(2), 6, 1200*time.Millisecond, 0, 4*time.Second)
	belief := []monitor.Belief{{Key: k, Run: run(1), Fence: 5, Since: ago(2 * time.Second)}}
	tests := []struct {
		name     string
		d        monitor.Device
		leases   []data.Lease
		want     string
		wantTone tone
	}{
		{"agrees", monitor.Device{State: monitor.DeviceHolding, Believes: belief, Reported: ago(time.Second)}, []data.Lease{mine},
			"✓ holds chat-1 · server: agrees, 3.0s left", toneOK},
		{"nothing on either side", monitor.Device{State: monitor.DeviceIdle, Reported: ago(time.Second)}, nil,
			"holds nothing · server: nothing", toneDim},
		{"taken over after its last report, which is recent", monitor.Device{State: monitor.DeviceHolding, Believes: belief, Reported: ago(2 * time.Second)},
			[]data.Lease{theirs}, "… believes it holds chat-1 · server: phone pid 2 since 1.2s", toneDim},
		{"taken over before its last report", monitor.Device{State: monitor.DeviceHolding, Believes: belief, Reported: ago(time.Second)},
			[]data.Lease{theirs}, "✗ believes it holds chat-1 · server: phone pid 2 since 1.2s", toneBad},
		{"frozen", monitor.Device{State: monitor.DeviceFrozen, Believes: belief, Reported: ago(2 * time.Second)},
			[]data.Lease{theirs}, "✗ believes it holds chat-1 · server: phone pid 2 since 1.2s", toneBad},
		{"silent past the limit", monitor.Device{State: monitor.DeviceHolding, Believes: belief, Reported: ago(4 * time.Second)},
			nil, "✗ believes it holds chat-1 · server: nobody holds it", toneBad},
		{"released, not reported yet", monitor.Device{State: monitor.DeviceHolding, Believes: belief, Reported: ago(time.Second)},
			nil, "… believes it holds chat-1 · server: nobody holds it", toneDim},
		{"its lease expired", monitor.Device{State: monitor.DeviceHolding, Believes: belief, Reported: ago(200 * time.Millisecond)},
			[]data.Lease{expired}, "✗ believes it holds chat-1 · server: expired 1.0s ago", toneBad},
		{"granted, not reported yet", monitor.Device{State: monitor.DeviceTrying, Holder: "desktop pid 1", Reported: ago(3 * time.Second)},
			[]data.Lease{mine}, "… believes it holds nothing · server: it holds chat-1, 3.0s left", toneDim},
		{"killed holding it", monitor.Device{State: monitor.DeviceKilled, Holder: "desktop pid 1", Believes: belief, Reported: ago(time.Second)},
			[]data.Lease{mine}, "✗ died holding chat-1 · server: still its lease, 3.0s left", toneBad},
		{"killed, taken over", monitor.Device{State: monitor.DeviceKilled, Holder: "desktop pid 1", Believes: belief, Reported: ago(time.Second)},
			[]data.Lease{theirs}, "died holding chat-1 · server: phone pid 2 since 1.2s", toneDim},
		{"killed before it reported its grant", monitor.Device{State: monitor.DeviceKilled, Holder: "desktop pid 1", Reported: ago(3 * time.Second)},
			[]data.Lease{mine}, "✗ dead · server: it holds chat-1, 3.0s left", toneBad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(key data.Key) (data.Lease, bool) {
				for _, l := range tt.leases {
					if l.Key == key {
						return l, true
					}
				}
				return data.Lease{}, false
			}
			var held []data.Lease
			for _, l := range tt.leases {
				if l.Holder == tt.d.Holder {
					held = append(held, l)
				}
			}
			tt.d.Account = "acme"
			got := believes(&tt.d, lookup, held, server, 3*time.Second)
			if got.text != tt.want || got.tone != tt.wantTone {
				t.Errorf("believes = %q (tone %d), want %q (tone %d)", got.text, got.tone, tt.want, tt.wantTone)
			}
		})
	}
}

// TestDevicesPaneKeys: d hides and shows the pane, tab reaches it, enter
// on a device opens its attempts (read through AttemptsFunc for that
// device), esc closes them.
func TestDevicesPaneKeys(t *testing.T) {
	var asked []string
	m, _ := newModel(t, 150, 40, withDevices, func(c *Config) {
		c.Devices.AttemptsFunc = func(d monitor.Device) ([]monitor.Attempt, error) {
			asked = append(asked, d.Account+" "+d.Name)
			return fixtureAttempts(), nil
		}
	})
	loadDevices(m)
	if !strings.Contains(screen(m), "DEVICES") {
		t.Fatalf("the pane is not shown at start:\n%s", screen(m))
	}
	press(m, "d")
	if strings.Contains(screen(m), "DEVICES") || m.layout().showDevices {
		t.Fatalf("d did not hide the pane:\n%s", screen(m))
	}
	press(m, "tab")
	if m.focus != focusEvents {
		t.Errorf("tab with the pane hidden: focus %d, want the events", m.focus)
	}
	press(m, "tab", "d", "tab")
	if m.focus != focusDevices {
		t.Fatalf("tab with the pane shown: focus %d, want the devices", m.focus)
	}
	cmd := press(m, "j", "j", "j", "enter")
	if m.mode != modeDevice || cmd == nil {
		t.Fatalf("enter on a device: mode %d, command %v; want its detail view loading", m.mode, cmd != nil)
	}
	m.Update(cmd())
	if len(asked) != 1 || asked[0] != "globex desktop" {
		t.Errorf("attempts read for %v, want [globex desktop]", asked)
	}
	out := screen(m)
	for _, want := range []string{"Device desktop of globex", "refused chat-1, 1.0s left: browser pid 4105", "granted: fence 39"} {
		if !strings.Contains(out, want) {
			t.Errorf("the detail view lacks %q:\n%s", want, out)
		}
	}
	press(m, "esc")
	if m.mode != modeMain || m.dev.detail != nil {
		t.Errorf("esc: mode %d, want the main screen", m.mode)
	}
}

// TestDevicesPaneFollowsReads: each read replaces the list, the cursor
// stays on its device, a failed read keeps the last list and says why,
// and while paused the pane keeps the frozen picture.
func TestDevicesPaneFollowsReads(t *testing.T) {
	m, _ := newModel(t, 150, 40, withDevices)
	loadDevices(m)
	press(m, "tab", "j", "j") // acme phone
	list := fixtureDevices()
	m.Update(devicesMsg{list: append(list[:0:0], list[2:]...)})
	if d, _ := m.selectedDevice(); d.Name != "phone" || d.Account != "acme" {
		t.Errorf("after a read without the first two: selected %s %s, want acme phone", d.Account, d.Name)
	}
	cmd := m.onDevices(devicesMsg{err: errors.New("relation \"leasetop_demo.device\" does not exist")})
	if cmd == nil {
		t.Error("a failed read schedules no next read")
	}
	if len(m.devices()) != 4 {
		t.Errorf("a failed read replaced the list: %d devices, want the last 4", len(m.devices()))
	}
	if !strings.Contains(screen(m), "stale: cannot read the devices: relation") {
		t.Errorf("after a failed read the pane does not say its rows are stale:\n%s", screen(m))
	}
	press(m, "space")
	list[2].State, list[2].Why = monitor.DeviceKilled, "during the pause"
	m.Update(devicesMsg{list: list})
	if strings.Contains(screen(m), "during the pause") {
		t.Errorf("paused, the pane shows a read that came after the pause:\n%s", screen(m))
	}
	press(m, "space")
	if !strings.Contains(screen(m), "during the pause") {
		t.Errorf("resumed, the pane does not show the latest read:\n%s", screen(m))
	}
}

// TestNoDevicesPane: a monitor without devices has no pane, its help does
// not list the pane's key, and the key is free for an embedding program's
// action.
func TestNoDevicesPane(t *testing.T) {
	m, _ := newModel(t, 150, 40)
	apply(m, syncBatch(loadedLeases(), nil))
	press(m, "d")
	if m.layout().showDevices || strings.Contains(screen(m), "DEVICES") {
		t.Errorf("a monitor without devices shows the pane:\n%s", screen(m))
	}
	press(m, "?")
	if strings.Contains(screen(m), keymap.Default().Devices.Help().Desc) || strings.Contains(screen(m), "devices pane") {
		t.Errorf("the help of a monitor without devices lists the pane's key:\n%s", screen(m))
	}
	if _, err := New(Config{Actions: []Action{{Binding: keyBinding("d", "delete")}}}); err != nil {
		t.Errorf("New with an action on d and no devices pane: %v", err)
	}
	if _, err := New(Config{Devices: monitor.DeviceSource{ListFunc: func() ([]monitor.Device, error) { return nil, nil }},
		Actions: []Action{{Binding: keyBinding("d", "delete")}}}); err == nil {
		t.Error("New with an action on d and a devices pane: no error, want the clash")
	}
}

// TestDevicesHostileTextRendersInert: what devices report (names, holder
// labels, reasons, the server's answers) is untrusted like any lease field:
// the pane and the device view show escapes visibly and send none.
func TestDevicesHostileTextRendersInert(t *testing.T) {
	evil := monitor.Device{Account: "acme", Name: "ph\x1b[2Jone", PID: 9, Holder: "x\x1b]0;pwned\x07", State: monitor.DeviceRefused,
		Key: devKey("acme", "s\u202e1"), Owner: "own\x1b[31mer", Why: "w\u009b1;1H", Reported: server}
	m, _ := newModel(t, 150, 40, func(c *Config) {
		c.Devices = monitor.DeviceSource{
			ListFunc:     func() ([]monitor.Device, error) { return []monitor.Device{evil}, nil },
			AttemptsFunc: func(monitor.Device) ([]monitor.Attempt, error) { return nil, nil },
		}
	})
	apply(m, syncBatch(nil, nil))
	m.Update(devicesMsg{list: []monitor.Device{evil}})
	views := map[string]string{"pane": m.View().Content}
	press(m, "tab", "enter")
	m.Update(attemptsMsg{id: idOf(evil), attempts: []monitor.Attempt{{At: server, PID: 9, Key: evil.Key, Action: "acq\x1b[Kuire", Answer: "busy: \x1b[?1049l"}}})
	views["device"] = m.View().Content
	checkInert(t, views, `ph\x1b[2Jone`)
}
