package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/cli"
)

func TestWatchRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bad := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(bad, []byte("[keys]\nrelease = \"x\"\nexplode = \"e\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		wantCode int
		want     string
	}{
		{nil, cli.ExitUsage, "the monitor needs a terminal"},
		{[]string{"watch", "--read-only"}, cli.ExitUsage, "the monitor needs a terminal"},
		{[]string{"watch", "--config", bad}, cli.ExitUsage, bad + `:3: unknown action "explode"`},
		{[]string{"watch", "--config", filepath.Join(t.TempDir(), "missing.toml")}, cli.ExitUsage, "read key config"},
		{[]string{"watch", "extra"}, cli.ExitUsage, "takes no arguments"},
	}
	for _, tt := range tests {
		_, errOut, code := leasetop(ctx, "postgres://127.0.0.1:1/none", tt.args...)
		if code != tt.wantCode || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("leasetop %v: code %d err %q, want %d and one line with %q", tt.args, code, errOut, tt.wantCode, tt.want)
		}
	}
}
