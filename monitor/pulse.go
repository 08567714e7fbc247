package monitor

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// pulseSpan is how far back the pulse remembers, in one-second buckets.
const pulseSpan = 15 * 60

// pulse counts the live events of a few kinds in one-second buckets over
// the last pulseSpan seconds, for the header's sparklines: a burst is seen
// before anyone reads a number.
type pulse struct {
	transitions, takeovers, zombies [pulseSpan]int32
	sec                             int64 // the unix second of the newest bucket
}

// Pulse is the live events counted in equal steps, oldest first, the last
// step ending now: every transition (an event that is not a rejected
// renewal), the takeovers among them, and the rejected renewals (zombies).
type Pulse struct {
	Step                            time.Duration
	Transitions, Takeovers, Zombies []int
}

func (p *pulse) add(now time.Time, k data.Kind) {
	p.advance(now)
	sec := now.Unix()
	if p.sec-sec >= pulseSpan {
		return // older than the pulse remembers
	}
	i := sec % pulseSpan // a late arrival counts in its own second
	switch k {
	case data.KindRenewRejected:
		p.zombies[i]++
		return
	case data.KindTakenOver:
		p.takeovers[i]++
	}
	p.transitions[i]++
}

func (p *pulse) advance(now time.Time) {
	s := now.Unix()
	if p.sec == 0 || s-p.sec >= pulseSpan {
		*p = pulse{sec: s}
		return
	}
	for ; p.sec < s; p.sec++ {
		i := (p.sec + 1) % pulseSpan
		p.transitions[i], p.takeovers[i], p.zombies[i] = 0, 0, 0
	}
}

// Pulse returns the live events of the last cells steps of step (a whole
// number of seconds, at least one; at most the last 15 minutes are kept),
// as of local time now.
func (s *State) Pulse(now time.Time, cells int, step time.Duration) Pulse {
	p := s.pulse // a copy: reading does not move the State's buckets
	p.advance(now)
	per := max(int64(step/time.Second), 1)
	cells = max(min(cells, int(pulseSpan/per)), 0)
	out := Pulse{Step: time.Duration(per) * time.Second, Transitions: make([]int, cells),
		Takeovers: make([]int, cells), Zombies: make([]int, cells)}
	for c := range cells {
		for j := range per {
			sec := p.sec - int64(cells-1-c)*per - (per - 1 - j)
			if p.sec-sec >= pulseSpan || sec <= 0 {
				continue
			}
			i := sec % pulseSpan
			out.Transitions[c] += int(p.transitions[i])
			out.Takeovers[c] += int(p.takeovers[i])
			out.Zombies[c] += int(p.zombies[i])
		}
	}
	return out
}
