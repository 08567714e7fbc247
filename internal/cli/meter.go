package cli

import "github.com/leasetop/leasetop/internal/progress"

// newMeter is a progress.Meter on the command's stderr: a status line
// redrawn in place when stderr is a terminal (in colour unless NO_COLOR),
// plain lines otherwise; prefix starts each line ("bench: ").
func newMeter(env Env, prefix string) *progress.Meter {
	return progress.New(env.Stderr, progress.Options{
		Terminal: isTerminal(env.Stderr),
		Environ:  []string{"TERM=" + env.Getenv("TERM"), "COLORTERM=" + env.Getenv("COLORTERM")},
		NoColor:  env.Getenv("NO_COLOR") != "",
		Prefix:   prefix,
	})
}
