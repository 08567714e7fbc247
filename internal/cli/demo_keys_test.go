package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/demo/device"
)

// TestDemoMixKeyNamesEveryMix: the help of the demo's S key names every
// strategy mix it cycles through, as --strategy takes them (before, it
// left out ask,queue).
func TestDemoMixKeyNamesEveryMix(t *testing.T) {
	t.Parallel()
	var help string
	for _, a := range demoActions(context.Background(), nil) {
		if a.Binding.Help().Key == "S" {
			help = a.Binding.Help().Desc
		}
	}
	if help == "" {
		t.Fatal("the demo has no S key")
	}
	for _, m := range device.Mixes() {
		if !strings.Contains(help, m.Name()) {
			t.Errorf("S's help %q does not name the mix %s", help, m.Name())
		}
	}
	if !strings.Contains(help, "ask,queue") {
		t.Errorf("S's help %q does not name ask,queue", help)
	}
}
