package demo

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// Strategy is what a device's user does when it presses send: what the
// device's client does if the conversation is busy.
type Strategy string

// The strategies a device may use.
const (
	// StratTry: one attempt; busy is a refusal (lease.Client.Try).
	StratTry Strategy = "try"
	// StratWait: on a refusal, wait for the conversation until the user's
	// patience runs out (lease.Client.Wait), in no particular order.
	StratWait Strategy = "wait"
	// StratPreempt: a new message stops the run in progress and starts its
	// own (lease.Client.Preempt); a paying run refuses it, and the user
	// then queues (or, without queue in the mix, waits) instead.
	StratPreempt Strategy = "preempt"
	// StratJoin: on a refusal, follow the running run's stream (its
	// attachment) instead of starting one.
	StratJoin Strategy = "join"
	// StratQueue: on a refusal, take a ticket in the conversation's queue
	// and get it in turn (lease.Client.Queue), until the user's patience
	// runs out.
	StratQueue Strategy = "queue"
	// StratAsk: "continue on this device": ask the holder to hand the
	// conversation over (lease.Client.Ask); the holder finishes its step
	// and hands over, or, paying, declines; an ask that expires (a frozen
	// holder) or is declined falls back to queue, else preempt.
	StratAsk Strategy = "ask"
)

// Mix is the strategies the devices choose from, each press one of them
// at random (seeded).
type Mix []Strategy

// strategies are the strategies a Mix may name, in the order String and
// the help list them.
func strategies() []Strategy {
	return []Strategy{StratTry, StratWait, StratPreempt, StratJoin, StratQueue, StratAsk}
}

// ClassicMix is the demo before the busy strategies: try, and sometimes wait.
func ClassicMix() Mix { return Mix{StratTry, StratWait} }

// DefaultMix is every strategy.
func DefaultMix() Mix { return Mix(strategies()) }

// Mixes are the mixes the monitor's demo key cycles through, starting
// with the default.
func Mixes() []Mix {
	return []Mix{DefaultMix(), ClassicMix(), {StratPreempt, StratQueue}, {StratJoin}, {StratQueue}, {StratAsk, StratQueue}}
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
// "classic" (try,wait), or "all".
func ParseMix(s string) (Mix, error) {
	switch strings.TrimSpace(s) {
	case "classic":
		return ClassicMix(), nil
	case "all", "":
		return DefaultMix(), nil
	}
	var m Mix
	for _, part := range strings.Split(s, ",") {
		st := Strategy(strings.TrimSpace(part))
		switch {
		case !slices.Contains(strategies(), st):
			return nil, inputErrorf("strategy", "%q is not one of %s (or classic, all)", truncate(string(st), 32), DefaultMix())
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
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}

// Has reports whether the mix contains s.
func (m Mix) Has(s Strategy) bool { return slices.Contains(m, s) }

// pick chooses one strategy of the mix.
func (m Mix) pick(rng *rand.Rand) Strategy {
	if len(m) == 0 {
		return StratTry
	}
	return m[rng.IntN(len(m))]
}

// payingOneIn: when the mix preempts, one run in this many is "paying"
// (a payment in progress: lease.Request.NotPreemptible), so that a preempt
// is sometimes refused.
const payingOneIn = 4
