package device

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/leasetop/leasetop/lease"
)

// What a device's user does when it presses send and the conversation is
// busy is one of the library's busy strategies (lease.OnBusy), drawn per
// press from the demo's Mix:
//
//   - refuse: nothing more: a refusal (lease.Client.Try);
//   - wait: wait for the conversation until the user's patience runs out
//     (lease.Client.Wait), in no particular order;
//   - preempt: a new message stops the run in progress and starts its own
//     (lease.Client.Preempt); a paying run refuses it, and the user then
//     queues (or, without queue in the mix, waits) instead;
//   - join: follow the running run's stream (its attachment) instead of
//     starting one;
//   - queue: take a ticket in the conversation's queue and get it in turn
//     (lease.Client.Queue), until the user's patience runs out;
//   - ask: "continue on this device": ask the holder to hand the
//     conversation over (lease.Client.Ask); the holder finishes its step
//     and hands over, or, paying, declines; an ask that expires (a frozen
//     holder) or is declined falls back to queue, else preempt;
//   - steer: talk to the run in progress instead of starting one: send it
//     a steer ("also check …"; a browser sometimes a cancel) and follow
//     where the message lands (lease.Client.Send, WaitMessage).
//
// A conversation that is free while its account is at its limit (its
// plan's live runs) is refused, or waited for, whatever the strategy.

// Mix is the strategies the devices choose from, each press one of them
// at random (seeded).
type Mix []lease.OnBusy

// strategies are the strategies a Mix may name, in the order String and
// the help list them.
func strategies() []lease.OnBusy {
	return []lease.OnBusy{lease.BusyRefuse, lease.BusyWait, lease.BusyPreempt, lease.BusyJoin, lease.BusyQueue, lease.BusyAsk, lease.BusySteer}
}

// ClassicMix is the demo before the busy strategies: refuse, and sometimes
// wait.
func ClassicMix() Mix { return Mix{lease.BusyRefuse, lease.BusyWait} }

// DefaultMix is every strategy.
func DefaultMix() Mix { return Mix(strategies()) }

// Mixes are the mixes the monitor's demo key cycles through, starting
// with the default.
func Mixes() []Mix {
	return []Mix{DefaultMix(), ClassicMix(), {lease.BusyPreempt, lease.BusyQueue}, {lease.BusyJoin}, {lease.BusyQueue}, {lease.BusyAsk, lease.BusyQueue}, {lease.BusySteer}}
}

// Name is the mix as --strategy takes it, by its short name where it has
// one: "all", "classic", else its strategies ("ask,queue").
func (m Mix) Name() string {
	switch {
	case slices.Equal(m, DefaultMix()):
		return "all"
	case slices.Equal(m, ClassicMix()):
		return "classic"
	}
	return m.String()
}

// MixCycle is the order the monitor's demo key goes through the mixes, for
// its help: "all → classic → preempt,queue → … → ask,queue".
func MixCycle() string {
	all := Mixes()
	names := make([]string, len(all))
	for i, m := range all {
		names[i] = m.Name()
	}
	return strings.Join(names, " → ")
}

// NextMix is the mix after m in Mixes (the first when m is none of them):
// what the monitor's demo key switches the devices to.
func NextMix(m Mix) Mix {
	all := Mixes()
	for i, x := range all {
		if slices.Equal(x, m) {
			return all[(i+1)%len(all)]
		}
	}
	return all[0]
}

// ParseMix reads a --strategy value: strategies separated by commas, or
// "classic" (refuse,wait), or "all".
func ParseMix(s string) (Mix, error) {
	switch strings.TrimSpace(s) {
	case "classic":
		return ClassicMix(), nil
	case "all", "":
		return DefaultMix(), nil
	}
	var m Mix
	for _, part := range strings.Split(s, ",") {
		name := strings.TrimSpace(part)
		st, err := lease.ParseOnBusy(name)
		switch {
		case err != nil || !slices.Contains(strategies(), st):
			return nil, inputErrorf("strategy", "%q is not one of %s (or classic, all)", truncate(name, 32), DefaultMix())
		case slices.Contains(m, st):
			return nil, inputErrorf("strategy", "%q is given twice", st)
		}
		m = append(m, st)
	}
	return m, nil
}

// String is the mix as --strategy takes it.
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, s := range m {
		parts[i] = s.String()
	}
	return strings.Join(parts, ",")
}

// Has reports whether the mix contains s.
func (m Mix) Has(s lease.OnBusy) bool { return slices.Contains(m, s) }

// pick chooses one strategy of the mix.
func (m Mix) pick(rng *rand.Rand) lease.OnBusy {
	if len(m) == 0 {
		return lease.BusyRefuse
	}
	return m[rng.IntN(len(m))]
}

// payingOneIn: when the mix preempts, one run in this many is "paying"
// (a payment in progress: lease.Request.NotPreemptible), so that a preempt
// is sometimes refused.
const payingOneIn = 4
