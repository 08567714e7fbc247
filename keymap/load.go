package keymap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// DefaultPath returns where the config file lives:
// $XDG_CONFIG_HOME/leasetop/config.toml, else ~/.config/leasetop/config.toml.
// It returns "" when neither variable is set.
func DefaultPath(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "leasetop", "config.toml")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "leasetop", "config.toml")
	}
	return ""
}

// Load returns the default bindings with the overrides of the TOML file at
// path applied. The file's [keys] table maps action names to a key or a list
// of keys; an empty list unbinds the action:
//
//	[keys]
//	release = ["x", "ctrl+d"]
//	pause = "p"
//
// With optional true, a missing file is not an error. Every error is one line
// that names the file and, where it can, the line.
func Load(path string, optional bool) (Map, error) {
	m := Default()
	b, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return m, nil
		}
		return m, fmt.Errorf("read key config: %w", err)
	}
	if err := m.apply(path, string(b)); err != nil {
		return Default(), err
	}
	return m, nil
}

// ContextsTable is the config file's other table: the named databases a
// monitor can watch ([contexts.NAME], read by the commands, not here).
const ContextsTable = "contexts"

// config is the file's shape, as far as the key map reads it.
type config struct {
	Keys map[string]*keyList `toml:"keys"`
}

// keyList is one action's keys: a string or an array of strings, each
// checked by CheckKey while decoding (so errors carry the line) and written
// the way Bubble Tea prints it (Canonical), so "pgdn" binds the key whose
// keystroke is "pgdown".
type keyList []string

// UnmarshalTOML implements toml.Unmarshaler.
func (k *keyList) UnmarshalTOML(v any) error {
	var keys []string
	switch v := v.(type) {
	case string:
		keys = []string{v}
	case []any:
		keys = []string{}
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("keys must be strings, got %v", e)
			}
			keys = append(keys, s)
		}
	default:
		return fmt.Errorf("want a key or a list of keys, got %v", v)
	}
	for i, s := range keys {
		if err := CheckKey(s); err != nil {
			return err
		}
		keys[i] = Canonical(s)
	}
	*k = keys
	return nil
}

func (m *Map) apply(path, text string) error {
	var cfg config
	md, err := toml.Decode(text, &cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s:%d: %s", path, pe.Position.Line, oneLine(pe.Message))
		}
		return fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	for _, k := range md.Undecoded() {
		if k[0] == ContextsTable {
			continue // the databases' table: not the key map's (internal/cli reads it)
		}
		return fmt.Errorf("%s:%d: unknown setting %q (the file has two tables, [keys] and [%s])", path, lineOf(text, k), k.String(), ContextsTable)
	}
	acts := m.actions()
	names := make([]string, 0, len(cfg.Keys))
	for name := range cfg.Keys {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		i := slices.IndexFunc(acts, func(a action) bool { return a.name == name })
		if i < 0 {
			return fmt.Errorf("%s:%d: unknown action %q in [keys] (want one of %s)",
				path, lineOf(text, toml.Key{"keys", name}), name, strings.Join(Names(), ", "))
		}
		keys := *cfg.Keys[name]
		if len(keys) == 0 { // unbound: no key matches, help says so
			acts[i].binding.SetKeys()
			acts[i].binding.SetHelp("(unbound)", acts[i].binding.Help().Desc)
			continue
		}
		acts[i].binding.SetKeys(keys...)
		acts[i].binding.SetHelp(strings.Join(keys, "/"), acts[i].binding.Help().Desc)
	}
	if err := m.conflicts(); err != nil {
		return conflictError(path, text, cfg, err)
	}
	return nil
}

// conflictError names the file and the line of a conflict: the line that
// binds the key in the file (the later one when the file binds it to both
// actions), and says so when the other action has the key by default.
func conflictError(path, text string, cfg config, err *conflict) error {
	line, fromDefault := 0, ""
	for _, name := range []string{err.first, err.second} {
		if _, inFile := cfg.Keys[name]; !inFile {
			fromDefault = name
			continue
		}
		line = max(line, lineOf(text, toml.Key{"keys", name}))
	}
	msg := err.Error()
	if fromDefault != "" {
		msg += fmt.Sprintf(" (%s has it by default: bind %s to other keys, or unbind it with %s = [])", fromDefault, fromDefault, fromDefault)
	}
	return fmt.Errorf("%s:%d: %s", path, line, msg)
}

// conflict is a key bound to two actions that are live at the same time.
type conflict struct{ key, first, second string }

func (c *conflict) Error() string {
	return fmt.Sprintf("key %q is bound to both %s and %s", c.key, c.first, c.second)
}

// conflicts reports a key bound to two actions that are live at the same
// time (the dialog's keys are separate from the main screen's).
func (m *Map) conflicts() *conflict {
	seen := map[string]string{}
	for _, a := range m.actions() {
		for _, k := range a.binding.Keys() {
			ctx := "main"
			if a.group == groupDialog {
				ctx = "dialog"
			}
			if other, ok := seen[ctx+" "+k]; ok {
				return &conflict{key: k, first: other, second: a.name}
			}
			seen[ctx+" "+k] = a.name
		}
	}
	return nil
}

// lineOf finds the line that defines key (a table, or a key in a table) in
// a TOML text; 0 when it cannot tell.
func lineOf(text string, k toml.Key) int {
	table, name := "", ""
	if len(k) > 0 {
		name = k[len(k)-1]
	}
	if len(k) > 1 {
		table = strings.Join(k[:len(k)-1], ".")
	}
	header := regexp.MustCompile(`^\s*\[\s*([^\]]+?)\s*\]`)
	assign := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(name) + `"?\s*=`)
	current := ""
	for i, line := range strings.Split(text, "\n") {
		if h := header.FindStringSubmatch(line); h != nil {
			current = h[1]
			if len(k) == 1 && current == name {
				return i + 1
			}
			continue
		}
		if current == table && assign.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
