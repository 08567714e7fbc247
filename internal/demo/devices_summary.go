package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/ui"
)

// writeDevices prints, after the counts, every device process the demo ran
// as it last reported itself (what the monitor's devices pane showed): how
// it ended, what it still believed it held, and its counters.
func writeDevices(w io.Writer, devices []ui.Device, readErr error) {
	fmt.Fprintln(w, "devices (each process as it reported itself in leasetop_demo.device):")
	if readErr != nil {
		fmt.Fprintf(w, "  cannot read them: %s\n", termtext.Clean(readErr.Error(), 0))
		return
	}
	nameW := len("DEVICE")
	for _, d := range devices {
		nameW = max(nameW, len(termtext.Clean(d.Account+" "+d.Name, 40)))
	}
	fmt.Fprintf(w, "  %-*s %7s  %-50s %4s %8s %17s\n", nameW, "DEVICE", "PID", "ENDED", "RUNS", "REFUSALS", "WRITES ok/refused")
	for _, d := range devices {
		fmt.Fprintf(w, "  %-*s %7d  %-50s %4d %8d %17s\n", nameW, termtext.Clean(d.Account+" "+d.Name, 40), d.PID,
			endedAs(d), d.Runs, d.Refusals, fmt.Sprintf("%d/%d", d.WritesAccepted, d.WritesRefused))
	}
}

// endedAs says how a device process ended, and what it still believed it
// held then.
func endedAs(d ui.Device) string {
	var s string
	switch d.State {
	case ui.DeviceStopped:
		s = "stopped"
	case ui.DeviceKilled:
		s = d.Why // exited by itself (...)
		if !strings.HasPrefix(s, "exited") {
			s = "killed (" + d.Why + ")"
		}
	case ui.DeviceStarting, ui.DeviceRestarting:
		s = "never reported"
	default:
		s = "last said: " + string(d.State)
	}
	for _, b := range d.Believes {
		s += fmt.Sprintf(" holding %s (fence %d)", b.Key, b.Fence)
	}
	return termtext.Clean(s, 60)
}
