package ui

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// historyReadLimit caps the events one read of the timeline's lanes returns.
const historyReadLimit = 50_000

// dbsTimeline is the timeline's reads on dbs: the lanes, a page of the
// window's sessions (data.Sessions), then their events by time range
// through the history's index, with who held them at the range's start
// (data.Replay); and who held them at an instant (data.OwnersAt). Each is
// one round trip per database. In a monitor of several databases a page is
// each database's page from the same session on, merged in key order
// (then the contexts' order) and cut to the page's size; the events are
// merged by time, each tagged with its context.
func dbsTimeline(ctx context.Context, dbs []dbSource) (func(LanesQuery) (History, error), func([]monitor.Key, time.Time) (Owners, error)) {
	owners := func(keys []monitor.Key, at time.Time) (Owners, error) {
		out := Owners{}
		for _, part := range byContext(dbs, keys) {
			o, err := ownersAt(ctx, part.store, part.name, part.keys, at)
			if err != nil {
				return Owners{}, err
			}
			out.merge(o)
		}
		return out, nil
	}
	timeline := func(q LanesQuery) (History, error) {
		lanes := q.Sessions.Limit
		q.Sessions.Limit++ // one more says whether more follow
		var keys []monitor.Key
		for _, db := range dbs {
			s, err := db.open()
			if err != nil {
				if len(dbs) == 1 {
					return History{}, err
				}
				continue // the others' lanes; the header says this one is down
			}
			page, err := s.Sessions(ctx, q.Sessions)
			if err != nil {
				return History{}, err
			}
			for _, k := range page {
				keys = append(keys, monitor.Key{Context: db.name, Key: k})
			}
		}
		order := contextOrder(dbs)
		slices.SortStableFunc(keys, func(a, b monitor.Key) int {
			return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Session, b.Session), cmp.Compare(order[a.Context], order[b.Context]))
		})
		more := len(keys) > lanes
		switch {
		case q.Sessions.Last: // the last lanes: the one more read is before them
			keys, more = keys[max(len(keys)-lanes, 0):], false
		default:
			keys = keys[:min(len(keys), lanes)]
		}
		if len(keys) == 0 {
			return History{}, nil
		}
		var h History
		for i, part := range byContext(dbs, keys) {
			ph, err := replay(ctx, part.store, part.name, part.keys, q.Since)
			if err != nil {
				return History{}, err
			}
			if i == 0 {
				h = ph
				continue
			}
			h.merge(ph)
		}
		h.Keys, h.More = keys, more
		return h, nil
	}
	return timeline, owners
}

// storeTimeline is dbsTimeline of a monitor of one database, store.
func storeTimeline(ctx context.Context, store *data.Store) (func(LanesQuery) (History, error), func([]monitor.Key, time.Time) (Owners, error)) {
	return dbsTimeline(ctx, []dbSource{{store: func() *data.Store { return store }}})
}

// contextOrder numbers dbs' contexts in their order.
func contextOrder(dbs []dbSource) map[string]int {
	order := make(map[string]int, len(dbs))
	for i, db := range dbs {
		order[db.name] = i
	}
	return order
}

// contextKeys are the keys of one context, with its store.
type contextKeys struct {
	name  string
	store *data.Store
	keys  []data.Key
}

// byContext splits keys by their context, in dbs' order, leaving out the
// contexts whose store has not opened.
func byContext(dbs []dbSource, keys []monitor.Key) []contextKeys {
	var out []contextKeys
	for _, db := range dbs {
		s, err := db.open()
		if err != nil {
			continue
		}
		part := contextKeys{name: db.name, store: s}
		for _, k := range keys {
			if k.Context == db.name {
				part.keys = append(part.keys, k.Key)
			}
		}
		if len(part.keys) > 0 {
			out = append(out, part)
		}
	}
	return out
}

// ownersAt reads who held keys of context name at the instant at.
func ownersAt(ctx context.Context, store *data.Store, name string, keys []data.Key, at time.Time) (Owners, error) {
	o, err := store.OwnersAt(ctx, at, data.HistoryFilter{Keys: keys})
	if errors.Is(err, data.ErrHistoryPruned) {
		if o.Whole {
			return Owners{}, nil // before the database's first event: nobody
		}
		return Owners{HistoryStart: o.HistoryStart}, nil // nothing can be told: the view says so
	}
	if err != nil {
		return Owners{}, err
	}
	return ownersOf(o, name), nil
}

// merge adds o's leases to the owners of other contexts; the history is
// known from the later of their starts.
func (w *Owners) merge(o Owners) {
	if w.Leases == nil {
		w.Leases = map[monitor.Key]data.Lease{}
	}
	maps.Copy(w.Leases, o.Leases)
	if len(o.Inexact) > 0 {
		if w.Inexact == nil {
			w.Inexact = map[monitor.Key]time.Duration{}
		}
		maps.Copy(w.Inexact, o.Inexact)
	}
	if o.HistoryStart.After(w.HistoryStart) {
		w.HistoryStart = o.HistoryStart
	}
}

// merge adds another context's history of its lanes: its events by time,
// who held them at the start; a read that stopped at its cap stops the
// lanes of both where the earlier one stopped.
func (h *History) merge(o History) {
	h.Start.merge(o.Start)
	h.Events = append(h.Events, o.Events...)
	if !o.ReadUntil.IsZero() && (h.ReadUntil.IsZero() || o.ReadUntil.Before(h.ReadUntil)) {
		h.ReadUntil = o.ReadUntil
	}
	if !h.ReadUntil.IsZero() {
		h.Events = slices.DeleteFunc(h.Events, func(ev data.Event) bool { return !ev.At.Before(h.ReadUntil) })
	}
	slices.SortStableFunc(h.Events, func(a, b data.Event) int { return a.At.Compare(b.At) })
}

// replay is the timeline's read of lanes of context name: who held keys at
// since and their events from then on, each tagged with the context.
func replay(ctx context.Context, store *data.Store, name string, keys []data.Key, since time.Time) (History, error) {
	const limit = historyReadLimit
	// Who held the lanes at since (or where the history kept starts, if
	// later) and their events from then on, in one round trip. Since is
	// inclusive: an event at since is in the start too, and replaying it
	// again changes no lane (it starts the span it started, or ends
	// none), but the events pane and n/N need it.
	r, err := store.Replay(ctx, data.HistoryFilter{Keys: keys, Since: since, Limit: limit})
	if errors.Is(err, data.ErrHistoryPruned) {
		return History{Start: Owners{HistoryStart: r.Start.HistoryStart}}, nil // no history at all
	}
	if err != nil {
		return History{}, err
	}
	start := ownersOf(r.Start, name)
	if r.Start.Whole && r.Start.At.After(since) {
		start = Owners{} // before the database's first event nobody held anything
	}
	evs, trunc := r.Events, r.Truncations
	var cut time.Time
	if len(evs) == limit {
		// The cap: the oldest limit events, whose last one's instant may
		// have more not read. The lanes are known up to it, not after.
		cut = evs[len(evs)-1].At
		evs = beforeTime(evs, cut)
		trunc = beforeTime(trunc, cut)
	}
	// A TRUNCATE's event names no session (its ids are ''), so the
	// keys' read does not see it; it ends every lane's span. Replay
	// reads them as the events of the key ('', ''), a range of the same
	// index, not a scan of the window's every event (at 1000 transitions
	// a second, 900,000 in 15 minutes: 360 ms against 0.1).
	evs = append(evs, trunc...)
	for i := range evs {
		evs[i].Context = name
	}
	return History{Start: start, Events: evs, ReadUntil: cut}, nil
}

// beforeTime returns the events (oldest first) before t.
func beforeTime(evs []data.Event, t time.Time) []data.Event {
	n := len(evs)
	for n > 0 && !evs[n-1].At.Before(t) {
		n--
	}
	return evs[:n]
}

// ownersOf is the history's answer as the view takes it. A whole history
// (nothing ever pruned) has no start to show: before its first event
// nobody held anything.
func ownersOf(o data.OwnersAt, name string) Owners {
	out := Owners{Leases: make(map[monitor.Key]data.Lease, len(o.Holdings))}
	if !o.Whole {
		out.HistoryStart = o.HistoryStart
	}
	for _, h := range o.Holdings {
		k := monitor.Key{Context: name, Key: h.Key}
		l := h.Lease
		l.Context = name
		out.Leases[k] = l
		if !h.ExpiryKnown && !h.Expired {
			if out.Inexact == nil {
				out.Inexact = map[monitor.Key]time.Duration{}
			}
			out.Inexact[k] = h.TTL
		}
	}
	return out
}
