package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/monitor"
)

// summaryWidth is the width the devices block keeps to: an 80-column
// terminal, where the headless demo's summary is read.
const summaryWidth = 80

// writeDevices prints, after the counts, every device process the demo ran
// as it last reported itself (what the monitor's devices pane showed): its
// counters, how it ended, and on a line of its own each run it still
// believed it held then, so any number of them fits in 80 columns. The
// free-length text (how it ended) is the last column, where it cannot push
// the others out of line.
func writeDevices(w io.Writer, devices []monitor.Device, readErr error) {
	fmt.Fprintln(w, "devices (each process as it reported itself in leasetop_demo.device):")
	if readErr != nil {
		fmt.Fprintf(w, "  cannot read them: %s\n", termtext.Clean(readErr.Error(), 0))
		return
	}
	nameW := len("DEVICE")
	for _, d := range devices {
		nameW = max(nameW, len(termtext.Clean(d.Account+" "+d.Name, 20)))
	}
	row := func(name, pid, runs, refusals, writes, ended string) string {
		return fmt.Sprintf("  %-*s %7s %5s %8s %13s  %s", nameW, name, pid, runs, refusals, writes, ended)
	}
	fmt.Fprintln(w, row("DEVICE", "PID", "RUNS", "REFUSALS", "WRITES ok/ref", "ENDED"))
	endedAt := len(row("", "", "", "", "", ""))
	for _, d := range devices {
		fmt.Fprintln(w, row(termtext.Clean(d.Account+" "+d.Name, 20), fmt.Sprint(d.PID), fmt.Sprint(d.Runs), fmt.Sprint(d.Refusals),
			fmt.Sprintf("%d/%d", d.WritesAccepted, d.WritesRefused), termtext.Clean(endedAs(d), max(summaryWidth-endedAt, 20))))
		if busy := busyCounts(d); busy != "" {
			fmt.Fprintf(w, "      %s\n", busy)
		}
		for _, b := range d.Believes {
			fmt.Fprintf(w, "      %s\n", termtext.Clean(fmt.Sprintf("still believed it held %s (fence %d)", b.Key, b.Fence), summaryWidth-6))
		}
	}
}

// busyCounts says, on a line of its own, what the device did when a
// conversation was busy (its strategies), or "" if none of them happened.
func busyCounts(d monitor.Device) string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, one)
		case n > 1:
			parts = append(parts, fmt.Sprintf(many, n))
		}
	}
	add(d.Preempts, "1 preempt", "%d preempts")
	add(d.Preempted, "preempted once", "preempted %d times")
	add(d.Joins, "1 join", "%d joins")
	add(d.QueueWaits, "1 queue wait", "%d queue waits")
	add(d.HandOvers, "1 hand-over", "%d hand-overs")
	if len(parts) == 0 {
		return ""
	}
	return "busy: " + strings.Join(parts, ", ")
}

// endedAs says how a device process ended.
func endedAs(d monitor.Device) string {
	switch d.State {
	case monitor.DeviceStopped:
		return "stopped"
	case monitor.DeviceKilled:
		if how, ok := strings.CutPrefix(d.Why, "exited by itself "); ok {
			return "exited " + how
		}
		if strings.HasPrefix(d.Why, "exited") {
			return d.Why
		}
		return "killed (" + d.Why + ")"
	case monitor.DeviceStarting, monitor.DeviceRestarting:
		return "never reported"
	default:
		return "last said: " + string(d.State)
	}
}
