package cli

import (
	"context"
	"os"

	"github.com/charmbracelet/x/term"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/keymap"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/ui"
)

// cmdWatch opens the live monitor (also what leasetop does without a
// command). With --context it watches several databases in one table.
func cmdWatch(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "watch", "[watch] [--dsn URL | --context NAME...] [--listen-dsn URL] [--poll 250ms] [--read-only] [--timeline] [--config PATH] [--theme dark|light|high-contrast|PATH]")
	dsn := dsnFlag(fs)
	listen := addListenFlags(fs)
	readOnly := fs.Bool("read-only", false, "no key changes the database; needs only SELECT on schema lease (role lease_reader)")
	timeline := fs.Bool("timeline", false, "open on the timeline view (key t): who held each session over time")
	config := configFlag(fs)
	contexts := addContextFlags(fs, config)
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
	cs, err := contexts.resolve(env)
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
	if cs != nil {
		return ui.Run(ctx, ui.Options{
			Config:  ui.Config{ReadOnly: *readOnly, Keys: &keys, Timeline: *timeline, Theme: th, Contexts: uiContexts(cs, opt)},
			Input:   env.Stdin,
			Output:  env.Stdout,
			NoColor: env.Getenv("NO_COLOR") != "",
		})
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
		// withInterrupts ends ctx on a signal: the exit code says which one.
		NoSignalHandler: true,
	})
}

// uiContexts are the monitor's contexts of cs, each opened with opt (its
// --poll) as openContext opens it: until it opens, the monitor shows it
// down with why, and keeps trying.
func uiContexts(cs []dbContext, opt data.Options) []ui.Context {
	out := make([]ui.Context, len(cs))
	for i, c := range cs {
		out[i] = ui.Context{
			Context: monitor.Context{Name: c.name, Open: func(ctx context.Context) (*data.Store, error) {
				return openContext(ctx, c, opt)
			}},
			ReadOnly: c.mode == modeReadOnly, Protected: c.mode == modeProtected, Color: c.color,
		}
	}
	return out
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
