package monitor

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// Asks is the asks to hand over pending on the sessions, as the monitor
// knows them: what a read of lease.handover_ask said (Reset, the pending
// asks now, data.Store.PendingAsks), kept current by the hand-over events
// applied since (Apply), so an ask shows the moment its event arrives and
// goes the moment it is answered, between two reads. The zero Asks knows
// none.
type Asks struct {
	pending map[Key]data.PendingAsk
}

// Reset replaces what Asks knows with a read of the pending asks (of every
// context, in a monitor of several).
func (a *Asks) Reset(read map[Key]data.PendingAsk) {
	a.pending = make(map[Key]data.PendingAsk, len(read))
	for k, ask := range read {
		a.pending[k] = ask
	}
}

// Apply takes one event into account: an ask (handover_asked) is pending
// until it is answered (handed_over, handover_declined, handover_expired)
// or its session changes hands or ends, whichever comes first.
func (a *Asks) Apply(ev data.Event) {
	k := EventKey(ev)
	switch {
	case ev.Kind == data.KindHandoverAsked:
		if a.pending == nil {
			a.pending = map[Key]data.PendingAsk{}
		}
		a.pending[k] = data.PendingAsk{RunID: ev.RunID, Holder: ev.Holder, HolderRunID: ev.PrevRunID, Until: ev.ExpiresAt}
	case ev.Kind == data.KindHandoverDeclined, ev.Kind == data.KindHandoverExpired:
		if ask, ok := a.pending[k]; ok && ask.RunID == ev.RunID {
			delete(a.pending, k)
		}
	case ev.Kind.Grants(), ev.Kind.Ends():
		delete(a.pending, k) // handed over, or the holder asked is gone
	case ev.Kind == data.KindTruncated:
		for p := range a.pending {
			if p.Context == ev.Context {
				delete(a.pending, p)
			}
		}
	}
}

// For returns the ask pending on l: addressed to l's run, its deadline
// after serverNow, the time of l's server.
func (a *Asks) For(l data.Lease, serverNow time.Time) (data.PendingAsk, bool) {
	ask, ok := a.pending[KeyOf(l)]
	if !ok || ask.HolderRunID != l.RunID || !ask.Until.After(serverNow) {
		return data.PendingAsk{}, false
	}
	ask.Remaining = ask.Until.Sub(serverNow)
	return ask, true
}
