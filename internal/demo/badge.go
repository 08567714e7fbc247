package demo

import (
	"fmt"
	"time"
)

// Badge is the monitor header's note on what the chaos schedule or a demo
// key last did, naming the monitor's demo keys (K kills, Z freezes the
// device that holds the selected session; see Act) until then.
func (d *Demo) Badge() string {
	l := d.Status()
	if l.Short == "" {
		if d.cfg.NoChaos {
			return "chaos off: K kill, Z freeze"
		}
		return "chaos soon: K kill, Z freeze"
	}
	return fmt.Sprintf("⚡ %ds ago: %s", int(time.Since(l.Time).Seconds()), l.Short)
}
