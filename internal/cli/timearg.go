package cli

import (
	"fmt"
	"strings"
	"time"
)

// timeArg is a point in time given on the command line: an RFC 3339 time,
// or a duration before now ("10m ago", "now") that is resolved on the
// database clock, so that it means the same instant as the history's times.
type timeArg struct {
	set bool
	abs time.Time     // an RFC 3339 time, when !relative
	ago time.Duration // how long before the server's now, when relative
	rel bool
}

// parseTimeArg parses s. Its error is one line, saying what it wants.
func parseTimeArg(s string) (timeArg, error) {
	t := strings.TrimSpace(s)
	if t == "now" {
		return timeArg{set: true, rel: true}, nil
	}
	if d, ok := strings.CutSuffix(t, " ago"); ok {
		ago, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || ago < 0 {
			return timeArg{}, fmt.Errorf("%q is not a duration ago (want e.g. \"10m ago\", \"1h30m ago\")", s)
		}
		return timeArg{set: true, rel: true, ago: ago}, nil
	}
	abs, err := time.Parse(time.RFC3339Nano, t)
	if err != nil {
		return timeArg{}, fmt.Errorf("%q is not a time: want RFC 3339 (2006-01-02T15:04:05Z) or a duration ago (\"10m ago\")", s)
	}
	return timeArg{set: true, abs: abs}, nil
}

// at returns the instant, taking relative times from the server's now.
func (a timeArg) at(serverNow time.Time) time.Time {
	if a.rel {
		return serverNow.Add(-a.ago)
	}
	return a.abs
}

// timeFlag is a flag.Value of a timeArg.
type timeFlag struct{ timeArg }

func (f *timeFlag) String() string {
	switch {
	case !f.set:
		return ""
	case f.rel:
		return f.ago.String() + " ago"
	}
	return f.abs.Format(time.RFC3339Nano)
}

func (f *timeFlag) Set(s string) error {
	a, err := parseTimeArg(s)
	if err != nil {
		return err
	}
	f.timeArg = a
	return nil
}
