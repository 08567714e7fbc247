package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/keymap"
)

// contextAll is the --context value that selects every context of the
// config file.
const contextAll = "all"

// maxContexts is the most contexts one command watches: the monitor's header
// gives each its place on one line.
const maxContexts = 16

// contextFlags are --context and --config, of a command that can watch
// several databases (watch, ls, events, exporter).
type contextFlags struct {
	values []string
	config *string
	fs     *flagSet
}

// addContextFlags registers --context on fs, and --config unless config is
// already registered (watch's key bindings file is the same file).
func addContextFlags(fs *flagSet, config *string) *contextFlags {
	f := &contextFlags{config: config, fs: fs}
	if f.config == nil {
		f.config = configFlag(fs)
	}
	fs.Func("context", "watch this named database of the config file's [contexts.NAME] tables (repeatable, or a comma list); "+
		"all: every one of them; NAME=DSN: a database not in the file", func(s string) error {
		f.values = append(f.values, s)
		return nil
	})
	return f
}

// configFlag registers --config on fs.
func configFlag(fs *flagSet) *string {
	return fs.String("config", "", "the config file: key bindings and [contexts.NAME] databases (default $XDG_CONFIG_HOME/leasetop/config.toml, if it exists)")
}

// set reports whether --context was given.
func (f *contextFlags) set() bool { return len(f.values) > 0 }

// resolve returns the contexts --context selects, in the order given (all:
// the file's order), or nil without --context. dsnSet and listenSet say
// whether --dsn and --listen-dsn were given: a context brings its own.
func (f *contextFlags) resolve(env Env) ([]dbContext, error) {
	if !f.set() {
		return nil, nil
	}
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	switch {
	case given["dsn"]:
		return nil, usageErrorf("--context and --dsn cannot go together: a context names its own database")
	case given["listen-dsn"]:
		return nil, usageErrorf("--context and --listen-dsn cannot go together: a context's listen DSN is its listen_dsn in the config file")
	}
	var (
		file   []dbContext
		loaded bool
	)
	fromFile := func() ([]dbContext, error) {
		if loaded {
			return file, nil
		}
		path, optional := *f.config, *f.config == ""
		if optional {
			path = keymap.DefaultPath(env.Getenv)
		}
		var err error
		if path != "" {
			file, err = loadContexts(path, optional)
		}
		if err != nil {
			return nil, &ExitError{Code: ExitUsage, Err: err}
		}
		if len(file) == 0 {
			return nil, usageErrorf("no contexts: the config file (%s) has no [contexts.NAME] table; see leasetop help watch", configName(path))
		}
		loaded = true
		return file, nil
	}
	var out []dbContext
	add := func(c dbContext) error {
		for _, o := range out {
			if o.name == c.name {
				return usageErrorf("--context: %q is given twice", c.name)
			}
		}
		out = append(out, c)
		return nil
	}
	for _, v := range f.values {
		if name, dsn, inline := strings.Cut(v, "="); inline {
			c, err := inlineContext(env, name, dsn)
			if err == nil {
				err = add(c)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		var names listFlag
		if err := names.Set(v); err != nil {
			return nil, usageErrorf("--context: %v", err)
		}
		for _, name := range names {
			file, err := fromFile()
			if err != nil {
				return nil, err
			}
			picked, err := pickContexts(file, name)
			if err != nil {
				return nil, err
			}
			for _, c := range picked {
				if err := add(c); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(out) > maxContexts {
		return nil, usageErrorf("--context: %d contexts, at most %d", len(out), maxContexts)
	}
	return out, nil
}

// pickContexts is what one --context name selects of the file's contexts.
func pickContexts(file []dbContext, name string) ([]dbContext, error) {
	if name == contextAll {
		return file, nil
	}
	names := make([]string, len(file))
	for i, c := range file {
		if c.name == name {
			return []dbContext{c}, nil
		}
		names[i] = c.name
	}
	return nil, usageErrorf("--context %q: no such context in the config file (it has %s)", name, strings.Join(names, ", "))
}

// inlineContext is --context NAME=DSN: a read-write context of the command
// line's own.
func inlineContext(env Env, name, dsn string) (dbContext, error) {
	if err := checkContextName(name); err != nil {
		return dbContext{}, usageErrorf("--context: %v", err)
	}
	if dsn == "" {
		return dbContext{}, usageErrorf("--context %s=: the DSN is empty (want NAME=postgres://…)", name)
	}
	warnPassword(env, "--context", dsn)
	if _, err := data.ParseConnConfig(dsn); err != nil {
		return dbContext{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--context %s: %w", name, err)}
	}
	return dbContext{name: name, dsn: dsn, inline: true}, nil
}

// where says where c is defined, for an error's hint.
func (c dbContext) where() string {
	if c.inline {
		return "--context " + c.name + "=…"
	}
	return "[" + keymap.ContextsTable + "." + c.name + "] in the config file"
}

// failed makes err, a database error of c's, one line that names c and
// where it is defined.
func (c dbContext) failed(err error) error {
	err = connErrorHint(err, c.where(), c.where())
	return &ExitError{Code: ExitCode(err), Err: fmt.Errorf("context %s: %w", c.name, err)}
}

// openContext opens c's store as openStoreWith does, with c's listen DSN.
func openContext(ctx context.Context, c dbContext, opt data.Options) (*data.Store, error) {
	opt.PinSearchPath, opt.ListenDSN = true, c.listenDSN
	s, err := data.OpenWith(ctx, c.dsn, opt)
	if err != nil {
		return nil, c.failed(err)
	}
	return s, nil
}

// reportContexts prints each error of errs on w, one line each, and returns
// the error the command exits with: the worst code among them (bad input
// before a database's failure), nil when there is none.
func reportContexts(w io.Writer, errs []error) error {
	code := ExitOK
	for _, err := range errs {
		if err == nil {
			continue
		}
		Report(w, err)
		if c := ExitCode(err); code == ExitOK || c == ExitUsage {
			code = c
		}
	}
	if code == ExitOK {
		return nil
	}
	return exitSilently(code)
}

// configName is how an error names the config file.
func configName(path string) string {
	if path == "" {
		return "none: neither XDG_CONFIG_HOME nor HOME is set"
	}
	return path
}
