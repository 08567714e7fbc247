package demo

import (
	"context"
	"fmt"
	"github.com/leasetop/leasetop/internal/demo/device"
	"syscall"

	"github.com/leasetop/leasetop/internal/data"
)

// actNextMix is the command CycleMix sends to the runner: not a chaos
// action, and no key.
const actNextMix ActionKind = -1

// CycleMix switches every device to the next strategy mix (NextMix): the
// monitor's demo key. Live devices that have reported ready hear it as
// SIGUSR1; devices started later get it on their command line. It returns
// the line that says so.
func (d *Demo) CycleMix(ctx context.Context) (Line, error) {
	return d.Act(ctx, actNextMix, data.Key{})
}

// nextMix switches the devices to the next mix.
func (r *runner) nextMix() Line {
	r.spawn.mix = device.NextMix(r.spawn.mix)
	n := 0
	for _, p := range r.procs {
		if p.alive && p.ready && p.signal(syscall.SIGUSR1) == nil {
			n++
		}
	}
	return r.chaos("strategies", fmt.Sprintf("the devices' users now choose from %s (%d devices told)", r.spawn.mix, n),
		"strategies: "+r.spawn.mix.String())
}
