package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// deviceEvents are events of both of the devices fixture's accounts.
func deviceEvents() []data.Event {
	at := func(ago time.Duration) time.Time { return server.Add(-ago) }
	return []data.Event{
		{ID: 201, Kind: data.KindAcquired, At: at(5 * time.Second), Key: devKey("globex", "chat-1"), RunID: run(23), Fence: 40, Holder: "browser pid 4105"},
		{ID: 202, Kind: data.KindAcquired, At: at(3 * time.Second), Key: devKey("acme", "chat-2"), RunID: run(22), Fence: 47, Holder: "desktop pid 4101"},
		{ID: 203, Kind: data.KindTakenOver, At: at(1200 * time.Millisecond), Key: devKey("acme", "chat-1"), RunID: run(21), PrevRunID: run(20),
			Fence: 48, PrevFence: 39, Holder: "phone pid 4103"},
	}
}

// TestFilterAppliesToEveryPane: / narrows the devices and events panes as
// well as the sessions (as in k9s); they kept showing the other accounts.
// A filter that hides everything a pane has says so in the pane.
func TestFilterAppliesToEveryPane(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {150, 40}} {
		m, _ := newModel(t, size[0], size[1], withDevices)
		apply(m, syncBatch(deviceLeases(), deviceEvents()))
		m.Update(devicesMsg{list: fixtureDevices()})
		s := screen(m)
		if !strings.Contains(s, "acme desktop") || !strings.Contains(s, "acme/chat-2") {
			t.Fatalf("%dx%d: before filtering, want acme's devices and events:\n%s", size[0], size[1], s)
		}
		press(m, "/", "g", "l", "o", "b", "e", "x", "enter")
		s = screen(m)
		if strings.Contains(s, "acme") {
			t.Errorf("%dx%d: filter globex: acme still shows:\n%s", size[0], size[1], s)
		}
		for _, want := range []string{"globex  chat-1", "globex desktop", "globex/chat-1"} {
			if !strings.Contains(s, want) {
				t.Errorf("%dx%d: filter globex: %q is missing:\n%s", size[0], size[1], want, s)
			}
		}
		press(m, "esc")
		if s := screen(m); !strings.Contains(s, "acme desktop") || !strings.Contains(s, "acme/chat-2") {
			t.Errorf("%dx%d: esc: want acme's devices and events back:\n%s", size[0], size[1], s)
		}
	}

	m, _ := newModel(t, 150, 40, withDevices)
	apply(m, syncBatch(deviceLeases(), deviceEvents()))
	m.Update(devicesMsg{list: fixtureDevices()})
	press(m, "/", "z", "z", "z", "enter")
	s := screen(m)
	for _, want := range []string{`no session matches "zzz"`, `no device matches "zzz"`, `no event matches "zzz"`} {
		if !strings.Contains(s, want) {
			t.Errorf("filter zzz: the screen lacks %q:\n%s", want, s)
		}
	}
}

// TestFilterMatchesRunsAndSessions: a device is kept by the session or run
// of its state or belief, an event by either of its runs.
func TestFilterMatchesRunsAndSessions(t *testing.T) {
	t.Parallel()
	devs := fixtureDevices()
	frozen := devs[1] // acme browser, frozen, believes acme/chat-1 run 20
	for _, tt := range []struct {
		filter string
		want   bool
	}{
		{"ACME", true}, {"browser", true}, {"chat-1", true}, {run(20).String()[:8], true},
		{"globex", false}, {"chat-2", false}, {run(21).String()[:8], false},
	} {
		if got := deviceMatches(frozen, tt.filter); got != tt.want {
			t.Errorf("deviceMatches(acme browser, %q) = %v, want %v", tt.filter, got, tt.want)
		}
	}
	taken := deviceEvents()[2]
	for _, tt := range []struct {
		filter string
		want   bool
	}{
		{run(20).String()[:8], true}, {run(21).String()[:8], true}, {"phone", true}, {"00000000-0000", false}, {"globex", false},
	} {
		if got := eventMatches(taken, tt.filter); got != tt.want {
			t.Errorf("eventMatches(taken over, %q) = %v, want %v", tt.filter, got, tt.want)
		}
	}
}
