package theme

import (
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/BurntSushi/toml"

	"github.com/leasetop/leasetop/keymap"
)

// FileName is the theme file's name, in the folder of the key bindings
// file (keymap.DefaultPath).
const FileName = "theme.toml"

// DefaultPath returns where the theme file lives: beside the key bindings
// file, $XDG_CONFIG_HOME/leasetop/theme.toml, else
// ~/.config/leasetop/theme.toml. It returns "" when neither variable is
// set.
func DefaultPath(getenv func(string) string) string {
	keys := keymap.DefaultPath(getenv)
	if keys == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(keys), FileName)
}

// Load reads the theme file at path: a built-in theme to start from and
// the colours it changes. Every key is optional:
//
//	base = "dark"            # dark (the default), light or high-contrast
//	strong = true            # emphasis beyond colour: every state in bold
//
//	[colors]                 # "#rrggbb", "#rgb", or a terminal colour 0-255
//	accent = "#58a6ff"       # titles, keys
//	ok = "#3fb950"           # live, held with time to spare, handed over
//	warn = "#d29922"         # expiring, taken over, preempted, paused
//	bad = "#f85149"          # expired, a zombie's renewal, down, the release dialog
//	dim = "#8b949e"          # labels, released, hints
//	faint = "#30363d"        # the empty part of a TTL bar
//	forced = "#bc8cff"       # a forced release
//	holders = ["#58a6ff", "#3fb950"]   # the timeline's holder colours
//	holder_text = "#0d1117"  # a holder's label on its colour
//
// Every error is one line that names the file.
func Load(path string) (Theme, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Theme{}, fmt.Errorf("read theme: %w", err)
	}
	return Parse(path, string(b))
}

// file is the theme file's shape.
type file struct {
	Base   *string `toml:"base"`
	Strong *bool   `toml:"strong"`
	Colors struct {
		Accent     *string  `toml:"accent"`
		OK         *string  `toml:"ok"`
		Warn       *string  `toml:"warn"`
		Bad        *string  `toml:"bad"`
		Dim        *string  `toml:"dim"`
		Faint      *string  `toml:"faint"`
		Forced     *string  `toml:"forced"`
		Holders    []string `toml:"holders"`
		HolderText *string  `toml:"holder_text"`
	} `toml:"colors"`
}

// Parse is Load of text, the contents of the file at path (for messages).
func Parse(path, text string) (Theme, error) {
	var f file
	md, err := toml.Decode(text, &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Theme{}, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, oneLine(pe.Message))
		}
		return Theme{}, fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Theme{}, fmt.Errorf("%s: unknown setting %q (want base, strong, or [colors] accent, ok, warn, bad, dim, faint, forced, holders, holder_text)",
			path, und[0].String())
	}
	base := NameDark
	if f.Base != nil {
		base = *f.Base
	}
	t, ok := Builtin(base)
	if !ok {
		return Theme{}, fmt.Errorf("%s: base %q is not a built-in theme (want %s)", path, base, strings.Join(Names(), ", "))
	}
	t.Name = base + " (" + path + ")"
	if f.Strong != nil {
		t.Strong = *f.Strong
	}
	c := f.Colors
	for _, s := range []struct {
		key string
		val *string
		dst *color.Color
	}{
		{"accent", c.Accent, &t.Accent}, {"ok", c.OK, &t.OK}, {"warn", c.Warn, &t.Warn}, {"bad", c.Bad, &t.Bad},
		{"dim", c.Dim, &t.Dim}, {"faint", c.Faint, &t.Faint}, {"forced", c.Forced, &t.Forced}, {"holder_text", c.HolderText, &t.HolderText},
	} {
		if s.val == nil {
			continue
		}
		col, err := parseColor(*s.val)
		if err != nil {
			return Theme{}, fmt.Errorf("%s: colors.%s: %v", path, s.key, err)
		}
		*s.dst = col
	}
	if c.Holders != nil {
		if len(c.Holders) == 0 {
			return Theme{}, fmt.Errorf("%s: colors.holders: want at least one colour", path)
		}
		t.Holders = make([]color.Color, len(c.Holders))
		for i, h := range c.Holders {
			col, err := parseColor(h)
			if err != nil {
				return Theme{}, fmt.Errorf("%s: colors.holders[%d]: %v", path, i, err)
			}
			t.Holders[i] = col
		}
	}
	return t, nil
}

var hexColor = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// parseColor reads "#rrggbb", "#rgb" or a terminal colour number 0-255.
func parseColor(s string) (color.Color, error) {
	if hexColor.MatchString(s) {
		return lipgloss.Color(s), nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 255 {
		return lipgloss.Color(s), nil
	}
	return nil, fmt.Errorf("want a colour as #rrggbb, #rgb or a terminal colour 0-255, got %q", clip(s))
}

// clip keeps a bad value short in a message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
