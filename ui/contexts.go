package ui

import "github.com/leasetop/leasetop/monitor"

// A Context is one database of a monitor that watches several (leasetop
// watch --context): its name, how to open it and its feed (as a
// monitor.Context), what the monitor may change in it, and its colour.
type Context struct {
	monitor.Context
	// ReadOnly refuses a forced release and a queue clear in it (the
	// monitor then needs only lease_reader there); Protected asks for the
	// session id to be typed before them, instead of (y/N).
	ReadOnly, Protected bool
	// Color is its colour in the CONTEXT column and the header: "#rrggbb",
	// "#rgb" or an ANSI colour number; "" for none.
	Color string
}

// contextOf returns the Context named name, and whether the monitor has
// one (a monitor of one database has none).
func (m *Model) contextOf(name string) (Context, bool) {
	for _, c := range m.cfg.Contexts {
		if c.Name == name {
			return c, true
		}
	}
	return Context{}, false
}
