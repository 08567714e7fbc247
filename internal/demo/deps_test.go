package demo_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDemoLinksNoView: the demo (its supervisor and the device child,
// `leasetop device`) and the device model it shares with the monitor
// (package monitor) link neither the monitor's view (ui) nor Bubble Tea,
// Lip Gloss or Bubbles (charm.land; internal/termtext's escape parser is
// not a view): a device process has no screen, and the devices pane's
// model is not the pane. Only internal/cli, which runs the monitor in
// front of the demo, brings them together.
func TestDemoLinksNoView(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	for _, pkg := range []string{"github.com/leasetop/leasetop/internal/demo", "github.com/leasetop/leasetop/internal/demo/device", "github.com/leasetop/leasetop/monitor"} {
		out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "charm.land/") || dep == "github.com/leasetop/leasetop/ui" {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
