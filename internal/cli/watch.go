package cli

import (
	"context"
	"os"

	"github.com/charmbracelet/x/term"

	"github.com/leasetop/leasetop/keymap"
	"github.com/leasetop/leasetop/ui"
)

// cmdWatch opens the live monitor (also what leasetop does without a
// command).
func cmdWatch(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "watch", "[watch] [--dsn URL] [--listen-dsn URL] [--poll 250ms] [--read-only] [--timeline] [--config PATH] [--theme dark|light|high-contrast|PATH]")
	dsn := dsnFlag(fs)
	listen := addListenFlags(fs)
	readOnly := fs.Bool("read-only", false, "no key changes the database; needs only SELECT on schema lease (role lease_reader)")
	timeline := fs.Bool("timeline", false, "open on the timeline view (key t): who held each session over time")
	config := fs.String("config", "", "key bindings file (default $XDG_CONFIG_HOME/leasetop/config.toml, if it exists)")
	themeName := themeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("watch takes no arguments, got %q", fs.Arg(0))
	}
	keys, err := loadKeys(env, *config)
	if err != nil {
		return err
	}
	th, err := loadTheme(env, *themeName)
	if err != nil {
		return err
	}
	opt, err := listen.options(env)
	if err != nil {
		return err
	}
	if !isTerminal(env.Stdin) || !isTerminal(env.Stdout) {
		return usageErrorf("the monitor needs a terminal: for scripts use leasetop ls or leasetop events")
	}
	store, err := openStoreWith(ctx, resolveDSN(env, *dsn), opt)
	if err != nil {
		return err
	}
	defer store.Close()
	return ui.Run(ctx, ui.Options{
		Config:  ui.Config{ReadOnly: *readOnly, Keys: &keys, Timeline: *timeline, Theme: th},
		Store:   store,
		Input:   env.Stdin,
		Output:  env.Stdout,
		NoColor: env.Getenv("NO_COLOR") != "",
	})
}

// loadKeys reads the key bindings: --config must exist; the default file is
// optional.
func loadKeys(env Env, path string) (keymap.Map, error) {
	optional := path == ""
	if optional {
		path = keymap.DefaultPath(env.Getenv)
		if path == "" {
			return keymap.Default(), nil
		}
	}
	keys, err := keymap.Load(path, optional)
	if err != nil {
		return keys, &ExitError{Code: ExitUsage, Err: err}
	}
	return keys, nil
}

// isTerminal reports whether v is a terminal file.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
