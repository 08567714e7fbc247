package demo

import (
	"fmt"
	"io"
	"strings"
)

// WriteIntro prints, before a headless demo's event stream, where it runs
// (DB.Where) and what it is about to start: cfg is the demo's Config with
// its defaults (Demo.Config).
func WriteIntro(w io.Writer, where string, cfg Config) {
	fmt.Fprintf(w, "leasetop demo: %s\n", where)
	conversations := 0
	for i := range cfg.Accounts {
		conversations += len(cfg.SessionIDsOf(i))
	}
	fmt.Fprintf(w, "leasetop demo: %d device processes (%s, for each of %d accounts) on %d conversations, ttl %s, seed %d, for %s\n",
		len(cfg.Devices)*cfg.Accounts, strings.Join(cfg.Devices, ", "), cfg.Accounts, conversations, cfg.TTL, cfg.Seed, cfg.Duration)
}
