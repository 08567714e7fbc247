package cli

import (
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/progress"
	"github.com/leasetop/leasetop/internal/termtext"
)

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

// showActivity puts what a server process does (data.Activity) on m's
// line, after what: a lock it waits for, or an index it builds with its
// count.
func showActivity(m *progress.Meter, what string, a data.Activity) {
	switch {
	case a.Waiting != "":
		m.Step(what + ": waiting for a lock (" + termtext.Clean(a.Waiting, 40) + ")")
	case a.Building != "":
		m.Step(what + ": building an index on " + termtext.Clean(a.Building, 80) + " (" + termtext.Clean(a.Phase, 60) + ")")
	default:
		m.Step(what)
	}
	if a.Building != "" && a.Total > 0 {
		m.Measure(a.Done, a.Total, a.Unit)
	} else {
		m.Measure(0, 0, "")
	}
}
