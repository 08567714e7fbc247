package audit

import (
	"github.com/leasetop/leasetop/internal/data"
)

// ask is one ask to hand over as the history shows it.
type ask struct {
	ev    data.Event // its handover_asked event: RunID the asker, PrevRunID the holder asked, ExpiresAt its deadline
	ended bool
}

// asks follows each session's asks through the history for invariants 7
// and 8.
type asks struct {
	pending map[data.Key]*ask
	all     []*ask
}

func newAsks() *asks { return &asks{pending: make(map[data.Key]*ask)} }

// event folds one event in; cur is the run that held the session before
// it. It checks invariant 7 on a hand-over: the lease went from the run
// that held it to the run whose ask was pending for it, in one event, with
// a higher fence: no third run between them.
func (c *checker) askEvent(a *asks, e data.Event, cur *grant) {
	switch e.Kind {
	case data.KindHandoverAsked:
		x := &ask{ev: e}
		a.pending[e.Key] = x
		a.all = append(a.all, x)
	case data.KindHandoverDeclined, data.KindHandoverExpired:
		if x := a.pending[e.Key]; x != nil && x.ev.RunID == e.RunID {
			x.ended = true
			delete(a.pending, e.Key)
		}
	case data.KindHandedOver:
		c.tally.HandOvers++
		x := a.pending[e.Key]
		switch {
		case x == nil || x.ev.RunID != e.RunID:
			c.fail(HandOverAtomic, e.Key, "run %s (fence %d) was handed the session (event %d) without a pending ask of its own", short(e.RunID), e.Fence, e.ID)
		case cur == nil || cur.run != e.PrevRunID:
			c.fail(HandOverAtomic, e.Key, "run %s was handed the session by run %s (event %d), which did not hold it then: a third run came between", short(e.RunID), short(e.PrevRunID), e.ID)
		case x.ev.PrevRunID != e.PrevRunID:
			c.fail(HandOverAtomic, e.Key, "run %s asked run %s, but run %s handed the session over (event %d)", short(e.RunID), short(x.ev.PrevRunID), short(e.PrevRunID), e.ID)
		}
		if x != nil && x.ev.RunID == e.RunID {
			x.ended = true
			delete(a.pending, e.Key)
		}
	}
}

// asksEnded checks invariant 8: every ask ended in the history (handed
// over, declined or expired), but for an ask whose asker's process was
// killed, or whose deadline was still ahead when the demo began to stop
// (its asker withdrew it); and every fallback a holder chose after an ask
// that did not get the session ran.
func (c *checker) asksEnded(a *asks) {
	for _, x := range a.all {
		if x.ended || c.rec.Killed[x.ev.Holder] || (!c.rec.StoppedAt.IsZero() && !x.ev.ExpiresAt.Before(c.rec.StoppedAt)) {
			continue
		}
		c.fail(AsksEnded, x.ev.Key, "run %s (%s) asked run %s to hand over (event %d, until %s) and the ask never ended",
			short(x.ev.RunID), x.ev.Holder, short(x.ev.PrevRunID), x.ev.ID, clock(x.ev.ExpiresAt))
	}
	for holder, n := range c.rec.FallbacksChosen {
		if ran := c.rec.FallbacksRun[holder]; ran < n && !c.rec.Killed[holder] {
			c.fail(AsksEnded, data.Key{}, "%s chose a fallback after %d asks that did not get the session, and ran %d", holder, n, ran)
		}
	}
}
