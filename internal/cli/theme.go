package cli

import (
	"errors"
	"io/fs"
	"os"

	"github.com/leasetop/leasetop/theme"
)

// themeFlag registers --theme on fs.
func themeFlag(fs *flagSet) *string {
	return fs.String("theme", "", "the monitor's colours: dark, light, high-contrast, or a theme file "+
		"(default $XDG_CONFIG_HOME/leasetop/"+theme.FileName+" if it exists, else dark or light by the terminal's background; NO_COLOR still turns colour off)")
}

// loadTheme returns the theme --theme names: a built-in one or a file
// (which must exist); without --theme, the theme file beside the key
// bindings if there is one, else nil: the monitor picks dark or light by
// the terminal's background.
func loadTheme(env Env, value string) (*theme.Theme, error) {
	if t, ok := theme.Builtin(value); ok {
		return &t, nil
	}
	path := value
	if path == "" {
		if path = theme.DefaultPath(env.Getenv); path == "" {
			return nil, nil
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	t, err := theme.Load(path)
	if err != nil {
		return nil, usageErrorf("%v (--theme takes dark, light, high-contrast or a theme file)", err)
	}
	return &t, nil
}
