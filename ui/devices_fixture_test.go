package ui

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The devices fixture: the demo twenty seconds in. acme's browser is frozen
// (a zombie) still believing it holds acme/chat-1, which phone took over;
// globex's browser was killed holding globex/chat-1, whose lease the
// server still gives it; globex's desktop was refused that session.

func devKey(a, s string) data.Key { return data.Key{Account: a, Session: s} }

func deviceLeases() []data.Lease {
	return []data.Lease{
		mkLease("acme", "chat-1", "phone pid 4103", run(21), 48, 1200*time.Millisecond, 1200*time.Millisecond, 4*time.Second),
		mkLease("acme", "chat-2", "desktop pid 4101", run(22), 47, 3*time.Second, 500*time.Millisecond, 4*time.Second),
		mkLease("globex", "chat-1", "browser pid 4105", run(23), 40, 5*time.Second, 3*time.Second, 4*time.Second),
	}
}

func fixtureDevices() []monitor.Device {
	ago := func(d time.Duration) time.Time { return server.Add(-d) }
	return []monitor.Device{
		{Account: "acme", Name: "desktop", PID: 4101, Holder: "desktop pid 4101", State: monitor.DeviceHolding, Since: ago(3 * time.Second),
			Key: devKey("acme", "chat-2"), Run: run(22), Fence: 47,
			Believes: []monitor.Belief{{Key: devKey("acme", "chat-2"), Run: run(22), Fence: 47, Since: ago(3 * time.Second)}},
			Runs:     4, Refusals: 3, WritesAccepted: 12, Reported: ago(200 * time.Millisecond)},
		{Account: "acme", Name: "browser", PID: 4102, Holder: "browser pid 4102", State: monitor.DeviceFrozen, Since: ago(3100 * time.Millisecond),
			Why: "SIGSTOP", Key: devKey("acme", "chat-1"), Run: run(20), Fence: 39,
			Believes: []monitor.Belief{{Key: devKey("acme", "chat-1"), Run: run(20), Fence: 39, Since: ago(6 * time.Second)}},
			Runs:     2, Refusals: 5, WritesAccepted: 7, Reported: ago(3200 * time.Millisecond)},
		{Account: "acme", Name: "phone", PID: 4103, Holder: "phone pid 4103", State: monitor.DeviceHolding, Since: ago(1200 * time.Millisecond),
			Key: devKey("acme", "chat-1"), Run: run(21), Fence: 48,
			Believes: []monitor.Belief{{Key: devKey("acme", "chat-1"), Run: run(21), Fence: 48, Since: ago(1200 * time.Millisecond)}},
			Runs:     3, Refusals: 6, WritesAccepted: 9, Reported: ago(100 * time.Millisecond)},
		{Account: "globex", Name: "desktop", PID: 4104, Holder: "desktop pid 4104", State: monitor.DeviceRefused, Since: ago(400 * time.Millisecond),
			Key: devKey("globex", "chat-1"), Owner: "browser pid 4105", OwnerExpires: server.Add(time.Second),
			Runs: 1, Refusals: 4, WritesAccepted: 3, Reported: ago(400 * time.Millisecond)},
		{Account: "globex", Name: "browser", PID: 4105, Holder: "browser pid 4105", State: monitor.DeviceKilled, Since: ago(800 * time.Millisecond),
			Why: "kill -9", Key: devKey("globex", "chat-1"), Run: run(23), Fence: 40,
			Believes: []monitor.Belief{{Key: devKey("globex", "chat-1"), Run: run(23), Fence: 40, Since: ago(5 * time.Second)}},
			Runs:     2, Refusals: 1, WritesAccepted: 6, Reported: ago(900 * time.Millisecond)},
		{Account: "globex", Name: "phone", PID: 4106, Holder: "phone pid 4106", State: monitor.DeviceLost, Since: ago(2 * time.Second),
			Why: "force-released by postgres (leasetop demo: chaos schedule)", Key: devKey("globex", "chat-2"), Run: run(24), Fence: 44,
			Runs: 3, Refusals: 2, WritesAccepted: 8, WritesRefused: 1, Reported: ago(2 * time.Second)},
	}
}

func fixtureAttempts() []monitor.Attempt {
	at := func(d time.Duration) time.Time { return server.Add(-d) }
	k := devKey("acme", "chat-1")
	return []monitor.Attempt{
		{At: at(3100 * time.Millisecond), PID: 4102, Action: "signal", Answer: "SIGSTOP by the demo (chaos schedule)", OK: true},
		{At: at(3300 * time.Millisecond), PID: 4102, Key: k, Action: "write", Run: run(20), Fence: 39, Answer: "accepted by the fence check", OK: true},
		{At: at(4600 * time.Millisecond), PID: 4102, Key: k, Action: "renew", Run: run(20), Fence: 39, Answer: "renewed", OK: true},
		{At: at(6 * time.Second), PID: 4102, Key: k, Action: "acquire", Run: run(20), Fence: 39, Answer: "granted: fence 39", OK: true},
		{At: at(7 * time.Second), PID: 4102, Key: devKey("acme", "chat-2"), Action: "acquire", Answer: "busy: desktop pid 4101 has it, 2.3s left"},
	}
}

// withDevices gives a model the fixture's devices pane.
func withDevices(c *Config) {
	c.Devices = monitor.DeviceSource{
		ListFunc:     func() ([]monitor.Device, error) { return fixtureDevices(), nil },
		AttemptsFunc: func(monitor.Device) ([]monitor.Attempt, error) { return fixtureAttempts(), nil },
	}
}

// loadDevices feeds the model the fixture's leases and devices, as the
// feed and the pane's first read would.
func loadDevices(m *Model) {
	apply(m, syncBatch(deviceLeases(), nil))
	m.Update(devicesMsg{list: fixtureDevices()})
}
