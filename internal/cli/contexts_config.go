package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/keymap"
)

// A dbContext is a named database the monitor and its companions can watch
// (k9s calls them contexts): a [contexts.NAME] table of the config file, or
// --context NAME=DSN.
type dbContext struct {
	name      string
	dsn       string
	listenDSN string // "" for the dsn's own connection
	mode      contextMode
	color     string // "#rrggbb", "#rgb" or an ANSI colour number; "" for none
	inline    bool   // given as --context NAME=DSN, not in the file
}

// contextMode is what a context lets the monitor change.
type contextMode int

const (
	modeReadWrite contextMode = iota // forced release and queue clear, after (y/N)
	modeProtected                    // the same, after typing the session id
	modeReadOnly                     // neither: SELECT only (role lease_reader)
)

// contextModes are the values of a context's mode, by what the file says.
var contextModes = map[string]contextMode{"read-write": modeReadWrite, "protected": modeProtected, "read-only": modeReadOnly}

func (m contextMode) String() string {
	for name, v := range contextModes {
		if v == m {
			return name
		}
	}
	return "read-write"
}

// UnmarshalText implements encoding.TextUnmarshaler, for the config file.
func (m *contextMode) UnmarshalText(b []byte) error {
	v, ok := contextModes[string(b)]
	if !ok {
		return fmt.Errorf("mode %q: want read-only, protected or read-write", b)
	}
	*m = v
	return nil
}

// contextColor is a context's colour in the monitor.
type contextColor string

var hexColor = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// UnmarshalText implements encoding.TextUnmarshaler, for the config file.
func (c *contextColor) UnmarshalText(b []byte) error {
	s := string(b)
	if n, err := strconv.Atoi(s); (err == nil && n >= 0 && n <= 255) || hexColor.MatchString(s) {
		*c = contextColor(s)
		return nil
	}
	return fmt.Errorf("color %q: want #rrggbb, #rgb or an ANSI colour number from 0 to 255", s)
}

// contextFile is the config file as the contexts read it.
type contextFile struct {
	Contexts map[string]contextTable `toml:"contexts"`
}

// contextTable is one [contexts.NAME] table.
type contextTable struct {
	DSN       string       `toml:"dsn"`
	ListenDSN string       `toml:"listen_dsn"`
	Mode      contextMode  `toml:"mode"`
	Color     contextColor `toml:"color"`
}

// contextName is what a context may be called: it is typed on the command
// line, shown in a column and used as a Prometheus label value.
var contextName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// checkContextName refuses a name that is not one (or is "all").
func checkContextName(name string) error {
	switch {
	case name == contextAll:
		return fmt.Errorf("context name %q is taken: --context %s selects every context of the config file", name, contextAll)
	case !contextName.MatchString(name):
		return fmt.Errorf("context name %q: want 1 to 32 letters, digits, '-', '_' or '.', starting with a letter or digit", name)
	}
	return nil
}

// loadContexts reads the [contexts] table of the config file at path, in the
// file's order. With optional true a missing file has none. Every error is
// one line naming the file and, where it can, the line.
func loadContexts(path string, optional bool) ([]dbContext, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read config: %w", err)
	}
	text := string(b)
	var f contextFile
	md, err := toml.Decode(text, &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, oneLine(pe.Message))
		}
		return nil, fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	for _, k := range md.Undecoded() {
		if k[0] == keymap.ContextsTable && len(k) > 2 {
			return nil, fmt.Errorf("%s:%d: unknown setting %q in [%s] (want dsn, listen_dsn, mode, color)",
				path, tableLine(text, k[:2]), k[len(k)-1], strings.Join(k[:2], "."))
		}
	}
	var out []dbContext
	for _, k := range md.Keys() {
		if len(k) != 2 || k[0] != keymap.ContextsTable {
			continue
		}
		c, err := contextOf(k[1], f.Contexts[k[1]])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: [%s]: %w", path, tableLine(text, k), k.String(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// contextOf checks one table of the file.
func contextOf(name string, t contextTable) (dbContext, error) {
	if err := checkContextName(name); err != nil {
		return dbContext{}, err
	}
	if t.DSN == "" {
		return dbContext{}, errors.New("dsn is missing")
	}
	for what, dsn := range map[string]string{"dsn": t.DSN, "listen_dsn": t.ListenDSN} {
		if dsn == "" {
			continue
		}
		if _, err := data.ParseConnConfig(dsn); err != nil {
			return dbContext{}, fmt.Errorf("%s: %w", what, err)
		}
	}
	return dbContext{name: name, dsn: t.DSN, listenDSN: t.ListenDSN, mode: t.Mode, color: string(t.Color)}, nil
}

// tableLine finds the line of a table's header ([contexts.eu]) in a TOML
// text; 0 when it cannot tell.
func tableLine(text string, k toml.Key) int {
	want := k.String()
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.ReplaceAll(strings.Trim(line, "[] \t"), " ", "") == want {
			return i + 1
		}
	}
	return 0
}
