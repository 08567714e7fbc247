package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/keymap"
)

// demoHelpConfig is the demo's monitor (devices pane, K and Z) with three
// actions unbound by a key bindings file.
func demoHelpConfig(t *testing.T) func(*Config) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte("[keys]\nresync = []\nsort = []\npage_up = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := keymap.Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		withDevices(c)
		c.Keys = &keys
		c.Actions = []Action{
			{Binding: keyBinding("K", "demo: kill -9 the device holding the selected session")},
			{Binding: keyBinding("Z", "demo: freeze that device past its TTL (a zombie)")},
		}
	}
}

// TestHelpScrollsAt80x24: the demo's help at 80x24 does not fit, and is too
// wide for two columns: it scrolls, says where it is, and every key can be
// reached (it was cut with "enlarge the terminal", the demo's own keys out
// of reach); an unbound action says "(unbound)" once, not twice.
func TestHelpScrollsAt80x24(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 80, 24, demoHelpConfig(t))
	loadDevices(m)
	press(m, "?")
	seen := map[string]bool{}
	look := func() string {
		s := screen(m)
		lines := strings.Split(s, "\n")
		if len(lines) != 24 {
			t.Fatalf("help is %d lines, want 24:\n%s", len(lines), s)
		}
		for _, l := range lines {
			seen[strings.Join(strings.Fields(l), " ")] = true
			if strings.Count(l, "(unbound)") > 1 {
				t.Errorf("line says (unbound) twice: %q", l)
			}
		}
		return s
	}
	s := look()
	if !strings.HasPrefix(s, "leasetop keys") || !strings.Contains(lastLine(s), "lines 1-22 of ") {
		t.Errorf("the help's first page lacks its title or where it is:\n%s", s)
	}
	for range 40 {
		press(m, "j")
		look()
	}
	s = look()
	if !strings.HasPrefix(s, "leasetop keys") || !strings.Contains(lastLine(s), "-") {
		t.Errorf("the scrolled help lost its title or where it is:\n%s", s)
	}
	for _, want := range []string{
		"K demo: kill -9 the device holding the selected session",
		"Z demo: freeze that device past its TTL (a zombie)",
		"(unbound) resync now: re-read every lease and missed event",
		"N/esc cancel (the default)",
		"d show or hide the devices pane (what each device believes)",
	} {
		if !seen[want] {
			t.Errorf("scrolling the help never showed %q", want)
		}
	}
	if n := strings.Count(s, "\n"); n != 23 {
		t.Errorf("at the end the help is %d lines, want 24", n+1)
	}
	press(m, "g")
	if s := screen(m); !strings.Contains(s, "Navigation") || !strings.Contains(lastLine(s), "lines 1-22 of ") {
		t.Errorf("g: want the help's top again:\n%s", s)
	}
	press(m, "G")
	bottom := screen(m)
	press(m, "pgdown")
	if screen(m) != bottom || !strings.Contains(bottom, "demo: freeze that device") {
		t.Errorf("G then pgdown: want the help's end, unmoved:\n%s", bottom)
	}
	press(m, "esc", "?")
	if s := screen(m); !strings.Contains(lastLine(s), "lines 1-22 of ") {
		t.Errorf("help opened again: want it from the top:\n%s", s)
	}
}

func lastLine(s string) string { return s[strings.LastIndex(s, "\n")+1:] }
