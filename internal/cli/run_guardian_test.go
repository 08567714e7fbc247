package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/cli"
)

// The guardian of leasetop run's command is a hidden command that only
// leasetop run starts (internal/supervise's TestRunGuardian shows it at
// work): run by hand it refuses in one line, exit 2, and help does not list
// it.
func TestRunGuardianRefusesToRunByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{{"run-guardian"}, {"run-guardian", "-h"}, {"help", "run-guardian"}} {
		out, errOut, code := leasetop(ctx, "postgres://127.0.0.1:1/none", args...)
		if code != cli.ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "internal to leasetop run") {
			t.Errorf("leasetop %v: code %d stdout %q stderr %q, want 2 and one line saying it is internal", args, code, out, errOut)
		}
	}
	out, _, _ := leasetop(ctx, "postgres://127.0.0.1:1/none", "help")
	if strings.Contains(out, "guardian") {
		t.Errorf("leasetop help lists the guardian:\n%s", out)
	}
}
