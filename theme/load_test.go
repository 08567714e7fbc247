package theme_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"

	"github.com/leasetop/leasetop/theme"
)

// TestParse: a file starts from its base and changes the colours it names;
// the rest stay the base's.
func TestParse(t *testing.T) {
	got, err := theme.Parse("theme.toml", `
base = "light"
strong = true

[colors]
ok = "#00ff00"
bad = "196"
holders = ["#123", "#456789"]
`)
	if err != nil {
		t.Fatal(err)
	}
	light := theme.Light()
	switch {
	case got.OK != lipgloss.Color("#00ff00") || got.Bad != lipgloss.Color("196"):
		t.Errorf("ok, bad = %v, %v; want #00ff00 and 196", got.OK, got.Bad)
	case got.Warn != light.Warn || got.Accent != light.Accent || got.HolderText != light.HolderText:
		t.Errorf("warn, accent, holder_text = %v, %v, %v; want light's %v, %v, %v", got.Warn, got.Accent, got.HolderText, light.Warn, light.Accent, light.HolderText)
	case len(got.Holders) != 2 || got.Holders[0] != lipgloss.Color("#123"):
		t.Errorf("holders = %v, want #123 and #456789", got.Holders)
	case !got.Strong || got.Name != "light (theme.toml)":
		t.Errorf("strong %v, name %q; want true and light (theme.toml)", got.Strong, got.Name)
	}
	if got, err := theme.Parse("t", ""); err != nil || got.OK != theme.Dark().OK || got.Strong {
		t.Errorf("an empty file = %+v, %v; want dark", got, err)
	}
}

// TestParseErrors: a bad file is one line that names it and what is wrong.
func TestParseErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"syntax", "base = \n", "theme.toml:1: "},
		{"unknown key", "[colors]\nprimary = \"#fff\"\n", `theme.toml: unknown setting "colors.primary" (want base, strong, or [colors]`},
		{"unknown base", `base = "solarized"`, `theme.toml: base "solarized" is not a built-in theme (want dark, light, high-contrast)`},
		{"colour name", "[colors]\nok = \"green\"\n", `theme.toml: colors.ok: want a colour as #rrggbb, #rgb or a terminal colour 0-255, got "green"`},
		{"colour out of range", "[colors]\nbad = \"256\"\n", `colors.bad: want a colour`},
		{"bad holder", "[colors]\nholders = [\"#fff\", \"#ggg\"]\n", `colors.holders[1]: want a colour`},
		{"no holders", "[colors]\nholders = []\n", `colors.holders: want at least one colour`},
		{"escape in a value", "[colors]\nok = \"\\u001b[2J\"\n", `got "\x1b[2J"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := theme.Parse("theme.toml", tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse = %v, want one line containing %q", err, tt.want)
			}
		})
	}
}

// TestDefaultPath: the theme file sits beside the key bindings file.
func TestDefaultPath(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": "/cfg", "HOME": "/home/u"}
	if got, want := theme.DefaultPath(func(k string) string { return env[k] }), "/cfg/leasetop/theme.toml"; got != want {
		t.Errorf("DefaultPath = %q, want %q", got, want)
	}
	delete(env, "XDG_CONFIG_HOME")
	if got, want := theme.DefaultPath(func(k string) string { return env[k] }), "/home/u/.config/leasetop/theme.toml"; got != want {
		t.Errorf("DefaultPath = %q, want %q", got, want)
	}
	if got := theme.DefaultPath(func(string) string { return "" }); got != "" {
		t.Errorf("DefaultPath without XDG_CONFIG_HOME or HOME = %q, want empty", got)
	}
}

// TestLoad reads a file, and a missing one is one line.
func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), theme.FileName)
	if err := os.WriteFile(path, []byte(`base = "high-contrast"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := theme.Load(path); err != nil || !got.Strong || got.Bad != theme.HighContrast().Bad {
		t.Errorf("Load = %+v, %v; want high-contrast", got, err)
	}
	if _, err := theme.Load(path + ".missing"); err == nil || !strings.Contains(err.Error(), "read theme") {
		t.Errorf("Load of a missing file = %v, want read theme: ...", err)
	}
}
