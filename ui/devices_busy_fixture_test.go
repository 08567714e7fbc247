package ui

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The busy fixture: the demo with every strategy. acme's phone sent a new
// message and preempted the desktop's run of chat-1 (the desktop's row says
// who stopped it); acme's browser found chat-1 busy and follows the phone's
// run; globex's browser holds chat-1 for a paying run, which refused the
// desktop's preempt, so the desktop queues (place 1) ahead of the phone
// (place 2); globex's chat-2 is being preempted.

func busyLeases() []data.Lease {
	return []data.Lease{
		mkLease("acme", "chat-1", "phone pid 4103", run(31), 52, 900*time.Millisecond, 400*time.Millisecond, 4*time.Second),
		mkLease("globex", "chat-1", "browser pid 4105", run(33), 44, 2*time.Second, 300*time.Millisecond, 4*time.Second),
		mkLease("globex", "chat-2", "phone pid 4106", run(34), 45, 3*time.Second, 1*time.Second, 4*time.Second),
	}
}

func busyDevices() []monitor.Device {
	ago := func(d time.Duration) time.Time { return server.Add(-d) }
	return []monitor.Device{
		{Account: "acme", Name: "desktop", PID: 4101, Holder: "desktop pid 4101", State: monitor.DevicePreempted, Since: ago(900 * time.Millisecond),
			Key: devKey("acme", "chat-1"), Run: run(30), Fence: 51, Owner: "phone pid 4103", Why: "preempted by phone pid 4103 (a new message)",
			Runs: 3, Refusals: 1, WritesAccepted: 9, WritesRefused: 1, Preempted: 1, Reported: ago(800 * time.Millisecond)},
		{Account: "acme", Name: "browser", PID: 4102, Holder: "browser pid 4102", State: monitor.DeviceFollowing, Since: ago(500 * time.Millisecond),
			Key: devKey("acme", "chat-1"), Run: run(31), Fence: 52, Owner: "phone pid 4103", Attachment: "stream-phone-4103-3",
			Runs: 2, Refusals: 2, WritesAccepted: 6, Joins: 2, Reported: ago(400 * time.Millisecond)},
		{Account: "acme", Name: "phone", PID: 4103, Holder: "phone pid 4103", State: monitor.DeviceHolding, Since: ago(900 * time.Millisecond),
			Key: devKey("acme", "chat-1"), Run: run(31), Fence: 52, Why: "preempted desktop pid 4101", Attachment: "stream-phone-4103-3",
			Believes: []monitor.Belief{{Key: devKey("acme", "chat-1"), Run: run(31), Fence: 52, Since: ago(900 * time.Millisecond)}},
			Runs:     4, Refusals: 1, WritesAccepted: 11, Preempts: 2, Reported: ago(100 * time.Millisecond)},
		{Account: "globex", Name: "desktop", PID: 4104, Holder: "desktop pid 4104", State: monitor.DeviceQueued, Since: ago(1500 * time.Millisecond),
			Key: devKey("globex", "chat-1"), Owner: "browser pid 4105", Place: 1, Why: "paying",
			Runs: 1, Refusals: 3, WritesAccepted: 3, QueueWaits: 1, Reported: ago(200 * time.Millisecond)},
		{Account: "globex", Name: "browser", PID: 4105, Holder: "browser pid 4105", State: monitor.DeviceHolding, Since: ago(2 * time.Second),
			Key: devKey("globex", "chat-1"), Run: run(33), Fence: 44, Why: "paying, not preemptible",
			Believes: []monitor.Belief{{Key: devKey("globex", "chat-1"), Run: run(33), Fence: 44, Since: ago(2 * time.Second)}},
			Runs:     2, WritesAccepted: 5, Reported: ago(300 * time.Millisecond)},
		{Account: "globex", Name: "phone", PID: 4106, Holder: "phone pid 4106", State: monitor.DeviceQueued, Since: ago(700 * time.Millisecond),
			Key: devKey("globex", "chat-1"), Owner: "browser pid 4105", Place: 2, Why: "",
			Believes: []monitor.Belief{{Key: devKey("globex", "chat-2"), Run: run(34), Fence: 45, Since: ago(3 * time.Second)}},
			Runs:     3, Refusals: 2, WritesAccepted: 7, QueueWaits: 2, Reported: ago(200 * time.Millisecond)},
	}
}

// busyMoments are a device in the moment between its new message and the
// preempt's answer, one refused by a paying run, one that asked the
// holder to hand over (continue on this device) and one that handed its
// run over.
func busyMoments() []monitor.Device {
	ago := func(d time.Duration) time.Time { return server.Add(-d) }
	return []monitor.Device{
		{Account: "acme", Name: "tablet", PID: 4107, Holder: "tablet pid 4107", State: monitor.DevicePreempting, Since: ago(20 * time.Millisecond),
			Key: devKey("acme", "chat-1"), Owner: "phone pid 4103", Runs: 1, Preempts: 1, Reported: ago(20 * time.Millisecond)},
		{Account: "globex", Name: "tablet", PID: 4108, Holder: "tablet pid 4108", State: monitor.DeviceRefused, Since: ago(100 * time.Millisecond),
			Key: devKey("globex", "chat-1"), Owner: "browser pid 4105", OwnerExpires: server.Add(3700 * time.Millisecond), Why: "paying",
			Runs: 0, Refusals: 1, Reported: ago(100 * time.Millisecond)},
		{Account: "acme", Name: "laptop", PID: 4109, Holder: "laptop pid 4109", State: monitor.DeviceAsking, Since: ago(1200 * time.Millisecond),
			Key: devKey("acme", "chat-2"), Owner: "desktop pid 4101", OwnerExpires: server.Add(1200 * time.Millisecond),
			Runs: 1, Reported: ago(100 * time.Millisecond)},
		{Account: "globex", Name: "laptop", PID: 4110, Holder: "laptop pid 4110", State: monitor.DeviceHandedOver, Since: ago(300 * time.Millisecond),
			Key: devKey("globex", "chat-2"), Run: run(35), Fence: 43, Owner: "phone pid 4106",
			Runs: 2, WritesAccepted: 4, HandOvers: 1, Reported: ago(300 * time.Millisecond)},
	}
}

func busyAttempts() []monitor.Attempt {
	at := func(d time.Duration) time.Time { return server.Add(-d) }
	k := devKey("acme", "chat-1")
	return []monitor.Attempt{
		{At: at(800 * time.Millisecond), PID: 4101, Key: k, Action: "release", Run: run(30), Fence: 51, Answer: "lost before it ended: preempted by phone pid 4103 (a new message)"},
		{At: at(850 * time.Millisecond), PID: 4101, Key: k, Action: "write", Run: run(30), Fence: 51, Answer: "refused by the fence check: fence 51 is stale"},
		{At: at(3 * time.Second), PID: 4101, Key: k, Action: "acquire", Run: run(30), Fence: 51, Answer: "granted: fence 51", OK: true},
	}
}

// withBusyDevices gives a model the busy fixture's devices pane.
func withBusyDevices(c *Config) {
	c.Devices = monitor.DeviceSource{
		ListFunc:     func() ([]monitor.Device, error) { return append(busyDevices(), busyMoments()...), nil },
		AttemptsFunc: func(monitor.Device) ([]monitor.Attempt, error) { return busyAttempts(), nil },
	}
}

// loadBusyDevices feeds the model the busy fixture.
func loadBusyDevices(m *Model) {
	apply(m, syncBatch(busyLeases(), nil))
	m.Update(devicesMsg{list: append(busyDevices(), busyMoments()...)})
}
