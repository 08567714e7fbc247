package monitor

import (
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// A handed_over event names both runs, but only schema versions that record
// lease.event.prev_holder for it name the label of the run it replaced
// (preempted events always do). Where it is missing, the model knows it
// anyway: it is the label of the grant before, in the events, or of the
// lease the State showed. The events pane and the timeline then word a
// hand-over as they word a preempt: "phone→desktop".

// holding is the run holding a session, as the events read so far tell.
type holding struct {
	run    uuid.UUID
	holder string
}

// prevHolders names the previous holder of hand-overs in a run of events
// read oldest first (of one context or several: by EventKey).
type prevHolders map[Key]holding

// name sets ev's PrevHolder if ev is a hand-over without one and the run
// it replaced is known (from the events before it, or before(its key) for
// a session's first event), then notes who holds ev's session after it.
func (p prevHolders) name(ev *data.Event, before func(Key) (data.Lease, bool)) {
	k := EventKey(*ev)
	if ev.Kind == data.KindHandedOver && ev.PrevHolder == "" {
		h, ok := p[k]
		if !ok && before != nil {
			if l, held := before(k); held {
				h, ok = holding{run: l.RunID, holder: l.Holder}, true
			}
		}
		if ok && h.run == ev.PrevRunID {
			ev.PrevHolder = h.holder
		}
	}
	switch {
	case ev.Kind.Grants():
		p[k] = holding{run: ev.RunID, holder: ev.Holder}
	case ev.Kind.Ends():
		p[k] = holding{}
	}
}

// NamePrevHolders returns evs (oldest first) with the PrevHolder of every
// hand-over that lacks it set to the label of the run it replaced: the
// holder the events before it in evs name or, for a session's first event
// in evs, the lease before says was held then (before may be nil). evs is
// not changed: what is filled is filled in a copy.
func NamePrevHolders(evs []data.Event, before func(Key) (data.Lease, bool)) []data.Event {
	p := prevHolders{}
	var out []data.Event
	for i := range evs {
		ev := evs[i]
		p.name(&ev, before)
		if ev.PrevHolder != evs[i].PrevHolder && out == nil {
			out = append(make([]data.Event, 0, len(evs)), evs...)
		}
		if out != nil {
			out[i] = ev
		}
	}
	if out == nil {
		return evs
	}
	return out
}
