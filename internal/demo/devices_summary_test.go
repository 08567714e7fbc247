package demo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestDeviceSummaryFitsIn80Columns: a killed device that still believed it
// held two sessions gets both in full, on lines of their own, a device's
// busy strategies are counted on a line of their own, and no line
// of the block is wider than 80 columns (the row ran past its column and was
// cut: "killed (kill -9) holding globex/chat-1 (fence 86) holding g…").
func TestDeviceSummaryFitsIn80Columns(t *testing.T) {
	devices := []monitor.Device{
		{Account: "globex", Name: "desktop", PID: 16663, State: monitor.DeviceStopped, Runs: 12, Refusals: 30, WritesAccepted: 140},
		{Account: "globex", Name: "browser", PID: 16664, State: monitor.DeviceKilled, Why: "kill -9", Runs: 7, Refusals: 4, WritesAccepted: 61, WritesRefused: 2,
			Believes: []monitor.Belief{
				{Key: data.Key{Account: "globex", Session: "chat-1"}, Fence: 86},
				{Key: data.Key{Account: "globex", Session: "chat-2"}, Fence: 87},
			}},
		{Account: "globex", Name: "phone", PID: 16665, State: monitor.DeviceKilled, Why: "exited by itself (exit status 1)", Runs: 1,
			Preempts: 3, Preempted: 1, Joins: 2, QueueWaits: 4, HandOvers: 5},
	}
	var b bytes.Buffer
	writeDevices(&b, devices, nil)
	out := b.String()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line is %d columns wide, want at most 80: %q", w, l)
		}
	}
	for _, want := range []string{
		"still believed it held globex/chat-1 (fence 86)\n",
		"still believed it held globex/chat-2 (fence 87)\n",
		"  killed (kill -9)\n",
		"  exited (exit status 1)\n",
		"      busy: 3 preempts, preempted once, 2 joins, 4 queue waits, 5 hand-overs\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the devices block lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "…") {
		t.Errorf("the devices block cut something:\n%s", out)
	}
}
