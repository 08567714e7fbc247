package demo

import (
	"math/rand/v2"
	"time"
)

// ActionKind is a kind of chaos.
type ActionKind int

// The chaos the demo inflicts.
const (
	// ActKill: kill -9 a device process that holds a run (process loss).
	ActKill ActionKind = iota + 1
	// ActFreeze: SIGSTOP a device that holds a run for longer than the TTL,
	// then SIGCONT it (a zombie).
	ActFreeze
	// ActForceRelease: force-release a held conversation, as an operator
	// would from the monitor.
	ActForceRelease
)

// String names the action as the event stream shows it.
func (k ActionKind) String() string {
	switch k {
	case ActKill:
		return "kill -9"
	case ActFreeze:
		return "SIGSTOP"
	case ActForceRelease:
		return "force-release"
	}
	return "nothing"
}

// Action is one step of the chaos schedule.
type Action struct {
	// At is when to act, from the start of the demo.
	At   time.Duration
	Kind ActionKind
	// Pick chooses the target among those eligible when the action runs
	// (sorted by conversation): target Pick mod n.
	Pick uint64
}

// Schedule is the seeded chaos schedule: the same seed and TTL give the same
// actions at the same times. Which device each one hits depends on who holds
// what at that moment, which the processes decide.
type Schedule struct {
	rng   *rand.Rand
	ttl   time.Duration
	next  time.Duration
	cycle []ActionKind
}

// NewSchedule starts a schedule: the first action after 3/4 TTL, then one
// every 1.25 to 2.25 TTLs. Each run of three actions is a shuffle of kill,
// freeze and force-release, so every kind shows within the first three.
func NewSchedule(seed int64, ttl time.Duration) *Schedule {
	return &Schedule{
		rng:  rand.New(rand.NewPCG(uint64(seed), 0x6368616f73)), // "chaos"
		ttl:  ttl,
		next: ttl * 3 / 4,
	}
}

// Next returns the next action.
func (s *Schedule) Next() Action {
	if len(s.cycle) == 0 {
		s.cycle = []ActionKind{ActKill, ActFreeze, ActForceRelease}
		s.rng.Shuffle(len(s.cycle), func(i, j int) { s.cycle[i], s.cycle[j] = s.cycle[j], s.cycle[i] })
	}
	a := Action{At: s.next, Kind: s.cycle[0], Pick: s.rng.Uint64()}
	s.cycle = s.cycle[1:]
	s.next += between(s.rng, s.ttl*5/4, s.ttl*9/4)
	return a
}

// FreezeFor is how long a freeze lasts: past the TTL with room to spare, so
// the server's expiry passes while the device is frozen even if a renewal
// was in flight when it stopped.
func FreezeFor(ttl time.Duration) time.Duration { return ttl + max(ttl/2, time.Second) }

// between is a uniform duration in [lo, hi].
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}
