package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/cli"
)

// TestHelpListsTheCommands: leasetop --help, -h and help list every
// command (not only the monitor's flags); help COMMAND prints that
// command's flags, as COMMAND -h does; a wrong help is one line, exit 2.
func TestHelpListsTheCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	commands := []string{"watch", "demo", "migrate", "maintain", "run", "ls", "events", "release", "bench", "exporter"}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "help"}} {
		out, errOut, code := leasetop(ctx, "postgres://127.0.0.1:1/none", args...)
		if code != cli.ExitOK || errOut != "" {
			t.Errorf("leasetop %v: code %d stderr %q, want 0 and nothing", args, code, errOut)
		}
		for _, c := range commands {
			if !strings.Contains(out, "\n  "+c+" ") {
				t.Errorf("leasetop %v does not list the command %q:\n%s", args, c, out)
			}
		}
		if strings.Contains(out, "  device ") {
			t.Errorf("leasetop %v lists the hidden device command:\n%s", args, out)
		}
	}
	for _, c := range []struct{ command, flag string }{{"demo", "-headless"}, {"watch", "-read-only"}, {"release", "-reason"}} {
		out, errOut, code := leasetop(ctx, "postgres://127.0.0.1:1/none", "help", c.command)
		want, _, _ := leasetop(ctx, "postgres://127.0.0.1:1/none", c.command, "-h")
		if code != cli.ExitOK || errOut != "" || !strings.Contains(out, "Usage: leasetop ") || !strings.Contains(out, c.flag) || out != want {
			t.Errorf("leasetop help %s: code %d stderr %q stdout:\n%s\nwant exit 0 and the output of %s -h:\n%s", c.command, code, errOut, out, c.command, want)
		}
	}
	for _, args := range [][]string{{"help", "frobnicate"}, {"help", "demo", "ls"}} {
		out, errOut, code := leasetop(ctx, "postgres://127.0.0.1:1/none", args...)
		if code != cli.ExitUsage || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("leasetop %v: code %d stdout %q stderr %q, want 2 and one line on stderr", args, code, out, errOut)
		}
	}
}
