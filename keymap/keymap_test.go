package keymap

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

func TestDefaultKeysMatchWhatBubbleTeaSends(t *testing.T) {
	m := Default()
	tests := []struct {
		name string
		msg  tea.KeyPressMsg
		want key.Binding
	}{
		{"k", tea.KeyPressMsg{Code: 'k', Text: "k"}, m.Up},
		{"down arrow", tea.KeyPressMsg{Code: tea.KeyDown}, m.Down},
		{"G", tea.KeyPressMsg{Code: 'g', Text: "G", Mod: tea.ModShift}, m.Bottom},
		{"pgdown", tea.KeyPressMsg{Code: tea.KeyPgDown}, m.PageDown},
		{"space", tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}, m.Pause},
		{"x", tea.KeyPressMsg{Code: 'x', Text: "x"}, m.Release},
		{"ctrl+d", tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}, m.Release},
		{"ctrl+c", tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}, m.Quit},
		{"?", tea.KeyPressMsg{Code: '?', Text: "?"}, m.Help},
		{"tab", tea.KeyPressMsg{Code: tea.KeyTab}, m.Focus},
		{"enter", tea.KeyPressMsg{Code: tea.KeyEnter}, m.Detail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !key.Matches(tt.msg, tt.want) {
				t.Errorf("%q does not match binding %v", tt.msg.String(), tt.want.Keys())
			}
		})
	}
}

func TestDefaultHasNoConflicts(t *testing.T) {
	m := Default()
	if err := m.conflicts(); err != nil {
		t.Fatal(err)
	}
}

func TestSetReadOnlyDisablesTheDatabaseActionsOnly(t *testing.T) {
	m := Default()
	m.SetReadOnly()
	x := tea.KeyPressMsg{Code: 'x', Text: "x"}
	if key.Matches(x, m.Release) {
		t.Error("x matches Release in read-only mode")
	}
	if b, ok := m.Disabled("x"); !ok || b.Help().Desc != m.Release.Help().Desc {
		t.Errorf("Disabled(x) = %v, %v, want the release binding", b.Help(), ok)
	}
	if _, ok := m.Disabled("j"); ok {
		t.Error("Disabled(j) = true, want false")
	}
	var disabled []string
	for _, g := range m.Groups() {
		for _, b := range g.Bindings {
			if !b.Enabled() {
				disabled = append(disabled, b.Help().Key)
			}
		}
	}
	if key.Matches(tea.KeyPressMsg{Code: 'C', Text: "C"}, m.ClearQueue) {
		t.Error("C matches ClearQueue in read-only mode")
	}
	if got, want := strings.Join(disabled, ","), "x/ctrl+d,C"; got != want {
		t.Errorf("disabled bindings = %q, want %q", got, want)
	}
}

func TestCheckKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"x", true}, {"G", true}, {"?", true}, {"ctrl+d", true}, {"shift+tab", true},
		{"ctrl+alt+x", true}, {"pgdown", true}, {"f5", true}, {"+", true}, {"ctrl++", true},
		{"", false}, {"alt+ctrl+x", false}, {"hyperspace", false}, {"ctrl+", false},
		{"f99", false}, {" ", false}, {"cmd+x", false}, {"\x1b", false},
	}
	for _, tt := range tests {
		err := CheckKey(tt.key)
		if (err == nil) != tt.ok {
			t.Errorf("CheckKey(%q) = %v, want ok=%v", tt.key, err, tt.ok)
		}
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadOverrides(t *testing.T) {
	p := writeConfig(t, "# mine\n[keys]\nrelease = [\"X\", \"delete\"]\npause = \"P\"\nresync = []\n")
	m, err := Load(p, false)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := strings.Join(m.Release.Keys(), ","), "X,delete"; got != want {
		t.Errorf("release keys = %q, want %q", got, want)
	}
	if got, want := m.Release.Help().Key, "X/delete"; got != want {
		t.Errorf("release help key = %q, want %q", got, want)
	}
	if got, want := strings.Join(m.Pause.Keys(), ","), "P"; got != want {
		t.Errorf("pause keys = %q, want %q", got, want)
	}
	if m.Resync.Enabled() {
		t.Error("resync = [] should unbind it")
	}
	if got, want := strings.Join(m.Up.Keys(), ","), "up,k"; got != want {
		t.Errorf("untouched up keys = %q, want %q", got, want)
	}
}

// The file's [contexts] table (the databases, read by internal/cli) is not
// the key map's: Load leaves it alone.
func TestLoadLeavesTheContextsTable(t *testing.T) {
	p := writeConfig(t, "[contexts.eu]\ndsn = \"postgres://eu/app\"\nmode = \"protected\"\n\n[keys]\npause = \"P\"\n")
	m, err := Load(p, false)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := strings.Join(m.Pause.Keys(), ","), "P"; got != want {
		t.Errorf("pause keys = %q, want %q", got, want)
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"unknown action", "[keys]\npause = \"p\"\nexplode = \"e\"\n", `:3: unknown action "explode"`},
		{"bad key", "[keys]\n\nrelease = [\"x\", \"hyperspace\"]\n", `:3: unknown key "hyperspace"`},
		{"bad modifier order", "[keys]\nquit = \"alt+ctrl+q\"\n", `:2: key "alt+ctrl+q": write modifiers`},
		{"not a string", "[keys]\nquit = 3\n", `:2: want a key or a list of keys`},
		{"syntax", "[keys]\nquit = [\"q\"\n", `.toml:`},
		{"unknown table", "[colors]\nbg = \"red\"\n", `:1: unknown setting "colors`},
		{"unknown table after contexts", "[contexts.eu]\ndsn = \"postgres://eu/app\"\n\n[colors]\nbg = \"red\"\n", `:4: unknown setting "colors`},
		{"conflict with a default", "[keys]\n# mine\npause = \"x\"\n", `:3: key "x" is bound to both pause and release (release has it by default`},
		{"conflict in the file", "[keys]\nquit = [\"q\", \"z\"]\nsort = \"s\"\n\nresync = \"z\"\n", `:5: key "z" is bound to both resync and quit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.text)
			_, err := Load(p, false)
			if err == nil {
				t.Fatalf("Load = nil error, want one containing %q", tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, p) || strings.Contains(msg, "\n") {
				t.Errorf("Load error = %q, want one line naming %s and containing %q", msg, p, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.toml")
	if _, err := Load(p, true); err != nil {
		t.Errorf("Load(missing, optional) = %v, want nil", err)
	}
	if _, err := Load(p, false); err == nil {
		t.Error("Load(missing, required) = nil, want an error")
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/leasetop/config.toml"},
		{map[string]string{"HOME": "/h"}, "/h/.config/leasetop/config.toml"},
		{map[string]string{}, ""},
	}
	for _, tt := range tests {
		if got := DefaultPath(env(tt.env)); got != tt.want {
			t.Errorf("DefaultPath(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestBound(t *testing.T) {
	m := Default()
	if name, ok := m.Bound("x"); !ok || name != "release" {
		t.Errorf("Bound(x) = %q, %v, want release", name, ok)
	}
	if name, ok := m.Bound("y"); ok {
		t.Errorf("Bound(y) = %q, want unbound on the main screen (y is the dialog's)", name)
	}
	if _, ok := m.Bound("K"); ok {
		t.Error("Bound(K) = true, want false")
	}
}

// TestGroupsOmit: a monitor without a devices pane leaves its key out of
// the help; the key can be rebound like any other.
func TestGroupsOmit(t *testing.T) {
	m := Default()
	listed := func(groups []Group) bool {
		for _, g := range groups {
			for _, b := range g.Bindings {
				if b.Help().Desc == m.Devices.Help().Desc {
					return true
				}
			}
		}
		return false
	}
	if !listed(m.Groups()) {
		t.Error("Groups() does not list the devices key")
	}
	if listed(m.Groups(&m.Devices)) {
		t.Error("Groups(&m.Devices) lists the devices key")
	}
	if n, want := len(m.Groups(&m.Devices)), len(m.Groups()); n != want {
		t.Errorf("Groups(&m.Devices) has %d groups, want %d", n, want)
	}
	p := writeConfig(t, "[keys]\ndevices = \"D\"\n")
	loaded, err := Load(p, false)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := strings.Join(loaded.Devices.Keys(), ","); got != "D" {
		t.Errorf("devices keys = %q, want D", got)
	}
}

// TestDefaultHelpNamesTheBoundKeys: the help screen names each key the way
// the bindings file takes it, so what a user copies from help into the file
// works (an arrow glyph stands for its key name).
func TestDefaultHelpNamesTheBoundKeys(t *testing.T) {
	glyphs := map[string]string{"↑": "up", "↓": "down", "←": "left", "→": "right"}
	m := Default()
	for _, a := range m.actions() {
		names := strings.Split(a.binding.Help().Key, "/")
		if slices.Contains(a.binding.Keys(), a.binding.Help().Key) { // "/" itself
			names = []string{a.binding.Help().Key}
		}
		for _, name := range names {
			if g, ok := glyphs[name]; ok {
				name = g
			}
			if !slices.Contains(a.binding.Keys(), name) {
				t.Errorf("%s: help names %q, want one of its keys %v", a.name, name, a.binding.Keys())
			}
			if err := CheckKey(name); err != nil {
				t.Errorf("%s: help names %q, which the bindings file refuses: %v", a.name, name, err)
			}
		}
	}
}

// TestLoadAcceptsPgdn: the file takes "pgdn" as well as "pgdown" (the name
// other tools' help uses), and either binds the key Bubble Tea sends.
func TestLoadAcceptsPgdn(t *testing.T) {
	pgdown := tea.KeyPressMsg{Code: tea.KeyPgDown}
	shiftPgdown := tea.KeyPressMsg{Code: tea.KeyPgDown, Mod: tea.ModShift}
	for _, text := range []string{
		"[keys]\npage_down = [\"pgdn\", \"shift+pgdn\"]\n",
		"[keys]\npage_down = [\"pgdown\", \"shift+pgdown\"]\n",
	} {
		m, err := Load(writeConfig(t, text), false)
		if err != nil {
			t.Fatalf("Load(%q): %v", text, err)
		}
		if !key.Matches(pgdown, m.PageDown) || !key.Matches(shiftPgdown, m.PageDown) {
			t.Errorf("Load(%q): page_down keys %v do not match %q and %q", text, m.PageDown.Keys(), pgdown.String(), shiftPgdown.String())
		}
		if got, want := m.PageDown.Help().Key, "pgdown/shift+pgdown"; got != want {
			t.Errorf("Load(%q): help key = %q, want %q", text, got, want)
		}
	}
	// The alias is the same key: binding it elsewhere conflicts with page_down.
	_, err := Load(writeConfig(t, "[keys]\nsort = \"pgdn\"\n"), false)
	if err == nil || !strings.Contains(err.Error(), `key "pgdown" is bound to both page_down and sort`) {
		t.Errorf("Load(sort = pgdn) = %v, want a conflict with page_down", err)
	}
}
