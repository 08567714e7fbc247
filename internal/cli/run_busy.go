package cli

import "fmt"

// busyMode is what leasetop run does when another run holds the lease:
// --on-busy (issue 26). --wait stays an alias of --on-busy wait.
type busyMode string

// The --on-busy values.
const (
	busyRefuse busyMode = "refuse" // exit 3 at once (the default)
	busyWait   busyMode = "wait"   // wait for the lease, in no particular order
	busyQueue  busyMode = "queue"  // take a ticket in the session's queue (run_queue.go)
)

// parseOnBusy checks --on-busy's value; wait is --wait.
func parseOnBusy(value string, wait bool) (busyMode, error) {
	m := busyMode(value)
	switch {
	case value == "" && wait, m == busyWait:
		return busyWait, nil
	case value == "":
		return busyRefuse, nil
	case wait:
		return "", usageErrorf("run: --wait is --on-busy wait; give one of them")
	}
	switch m {
	case busyRefuse, busyQueue:
		return m, nil
	}
	return "", usageErrorf("run: --on-busy must be refuse, wait or queue, got %q", fmt.Sprintf("%.40s", value))
}
