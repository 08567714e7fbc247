package cli

import "flag"

// What leasetop run does when another run holds the lease: --on-busy.
// Each strategy adds its value here and its code in a file of its own
// (ask: run_ask.go).
const (
	onBusyRefuse = "refuse" // exit 3 at once (the default)
	onBusyWait   = "wait"   // wait for it (--wait is an alias)
	onBusyAsk    = "ask"    // ask the holder to hand over (run_ask.go)
)

// busyFlags is --on-busy.
type busyFlags struct {
	onBusy *string
}

func addBusyFlags(fs *flagSet) busyFlags {
	return busyFlags{onBusy: fs.String("on-busy", onBusyRefuse,
		"when another run holds the lease: refuse (exit 3), wait, or ask (its holder to hand over: --ask-timeout, --then)")}
}

// resolve returns the --on-busy value, with --wait as an alias of wait.
func (b busyFlags) resolve(fs *flagSet, wait bool) (string, error) {
	v := *b.onBusy
	switch v {
	case onBusyRefuse, onBusyWait, onBusyAsk:
	default:
		return "", usageErrorf("run: --on-busy must be refuse, wait or ask, got %q", v)
	}
	if wait {
		if isSet(fs, "on-busy") && v != onBusyWait {
			return "", usageErrorf("run: --wait is --on-busy wait; it cannot go with --on-busy %s", v)
		}
		v = onBusyWait
	}
	return v, nil
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
