package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/cli"
)

// TestThemeBadInput: a --theme that is neither a built-in theme nor a
// readable theme file, and a bad theme file beside the key bindings, stop
// watch and demo with one line that names the file, before they connect or
// look for a terminal.
func TestThemeBadInput(t *testing.T) {
	cfg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfg, "leasetop"), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(cfg, "leasetop", "theme.toml")
	if err := os.WriteFile(bad, []byte("[colors]\nok = \"green\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown name", nil, []string{"watch", "--theme", "solarized"}, "read theme: open solarized: no such file or directory (--theme takes dark, light, high-contrast or a theme file)"},
		{"bad file", nil, []string{"watch", "--theme", bad}, bad + `: colors.ok: want a colour as #rrggbb, #rgb or a terminal colour 0-255, got "green"`},
		{"bad default file", map[string]string{"XDG_CONFIG_HOME": cfg}, []string{"watch"}, bad + ": colors.ok: want a colour"},
		{"built-in name wins over the file", map[string]string{"XDG_CONFIG_HOME": cfg}, []string{"watch", "--theme", "light"}, "the monitor needs a terminal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := cli.Run(context.Background(), cli.Env{Args: append(tt.args, "--dsn", "postgres://nobody@127.0.0.1:1/none"),
				Getenv: func(k string) string { return tt.env[k] }, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
			code := cli.Report(&errOut, err)
			if code != cli.ExitUsage || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and one line containing %q", code, errOut.String(), cli.ExitUsage, tt.want)
			}
		})
	}
}
