package monitor

import "time"

// DeviceSource is where a program's devices come from: the processes of a
// system that holds leases, each as it reports itself (the demo's device
// processes report through a table of the demo's database). The monitor's
// devices pane (ui.Config.Devices) shows what each one believes it holds
// beside what the server's lease table says (CompareBeliefs). A source
// without ListFunc gives no devices.
type DeviceSource struct {
	// ListFunc reads every device's latest report. It may block: the
	// monitor calls it off its UI goroutine, every Every.
	ListFunc func() ([]Device, error)
	// AttemptsFunc reads a device's recent attempts and the server's
	// answers, newest first, for its detail view. Optional.
	AttemptsFunc func(d Device) ([]Attempt, error)
	// Every is how often the devices are read. Default (in the monitor)
	// 500 ms.
	Every time.Duration
	// Silent is how long a device may go without reporting before what the
	// server changed meanwhile counts as a mismatch rather than a report
	// not made yet (CompareBeliefs). Default (in the monitor) 3 s.
	Silent time.Duration
}
