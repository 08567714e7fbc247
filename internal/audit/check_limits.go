package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// slotRun is a run that holds a slot of its account's limit, as the
// history shows it: from its grant until an event ends or replaces it.
type slotRun struct {
	key data.Key
	run uuid.UUID
	// liveUntil is the latest instant the history proves it live: its
	// grant's expiry (renewals, which leave no event, only extend it) or an
	// acknowledgement it made under its fence. Its lease may have lasted
	// longer; never shorter.
	liveUntil time.Time
}

// slots follows each account's limit (the account's own, pool "": a
// pool's limit names runs the events do not) and its live runs through
// the history for invariant 9.
type slots struct {
	limit map[string]int                    // account → slots, while a limit_set is in force
	live  map[string]map[uuid.UUID]*slotRun // account → its runs not ended by an event
	peak  map[string]int                    // account → the most live runs seen at a grant
}

func newSlots(start map[string]int) *slots {
	limit := make(map[string]int, len(start))
	for acct, n := range start {
		limit[acct] = n
	}
	return &slots{limit: limit, live: make(map[string]map[uuid.UUID]*slotRun), peak: make(map[string]int)}
}

// limitEvent folds one event in for invariant 9 (never more live runs of an
// account than its limit), after the session's ownership was updated. It
// counts at each grant, in the history's order, the account's runs that
// the history proves live at the grant's instant: granted before it, not
// released or replaced before it, and not past liveUntil. A run's
// liveUntil is a lower bound of its expiry, so a slow machine, a
// renewal or a crash can only make the count smaller than the truth, never
// larger: a count above the limit is a real second holder.
func (c *checker) limitEvent(sl *slots, e data.Event) {
	acct := e.Key.Account
	switch {
	case e.Kind == data.KindLimitSet || e.Kind == data.KindLimitRemoved:
		var n int
		switch _, err := fmt.Sscanf(e.Reason, "%d slot", &n); { // "1 slot", "3 slots"
		case e.Kind == data.KindLimitSet && err == nil:
			sl.limit[acct] = n
		case e.Kind == data.KindLimitRemoved && e.Reason == "no limit":
			delete(sl.limit, acct)
		}
		// a pool's limit ("pool P: …") is not checked here
	case e.Kind == data.KindLimitRefused:
		c.tally.LimitRefusals++
	case e.Kind == data.KindMessageAcked:
		if r := sl.live[acct][e.RunID]; r != nil && e.At.After(r.liveUntil) {
			r.liveUntil = e.At // the ack locked its unexpired lease
		}
	case e.Kind.Ends():
		delete(sl.live[acct], e.RunID)
	case e.Kind.Grants():
		live := sl.live[acct]
		if live == nil {
			live = make(map[uuid.UUID]*slotRun)
			sl.live[acct] = live
		}
		if _, ok := sl.limit[acct]; ok {
			c.slotOf(e)
		}
		delete(live, e.PrevRunID) // a takeover, preempt or hand-over ends the run it replaces
		live[e.RunID] = &slotRun{key: e.Key, run: e.RunID, liveUntil: e.ExpiresAt}
		n := 0
		for id, r := range live {
			if !r.liveUntil.After(e.At) && id != e.RunID {
				delete(live, id) // expired for all the history can prove
				continue
			}
			n++
		}
		sl.peak[acct] = max(sl.peak[acct], n)
		if lim, ok := sl.limit[acct]; ok && n > lim {
			c.fail(LimitKept, e.Key, "run %s (%s, fence %d) was granted at %s while account %s had a limit of %d and %d other runs held it (event %d)",
				short(e.RunID), e.Holder, e.Fence, clock(e.At), acct, lim, n-1, e.ID)
		}
	}
}

// slotOf marks a grant made while its account's own limit was in force
// slotless when its event names no slot of the account ("slot 2", or "slot
// 2, deep-research slot 1" with a pool's; a pool's slot alone is not the
// account's). A hand-over, and a preempt of a live run, move the slot with
// the conversation and name none: such a run holds a slot when the run it
// replaced did.
func (c *checker) slotOf(e data.Event) {
	g := c.grants[e.RunID]
	if g == nil {
		return
	}
	for part := range strings.SplitSeq(e.Reason, ", ") {
		var n int
		if _, err := fmt.Sscanf(part, "slot %d", &n); err == nil {
			return
		}
	}
	if e.Kind == data.KindHandedOver || e.Kind == data.KindPreempted {
		if prev := c.grants[e.PrevRunID]; prev != nil && prev.slotless {
			g.slotless, g.slotEvent, g.slotKind = true, prev.slotEvent, prev.slotKind
		}
		return
	}
	g.slotless, g.slotEvent, g.slotKind = true, e.ID, e.Kind
}

// slotsTally records the peak of each limited account.
func (c *checker) slotsTally(sl *slots) {
	for acct, lim := range sl.limit {
		if c.limits == nil {
			c.limits = make(map[string]LimitPeak)
		}
		c.limits[acct] = LimitPeak{Slots: lim, Peak: sl.peak[acct]}
	}
}
