package ui

import (
	"context"
	"errors"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// historyReadLimit caps the events one read of the timeline's lanes returns.
const historyReadLimit = 50_000

// storeTimeline is the timeline's reads on store: the lanes, a page of the
// window's sessions (data.Sessions), then their events by time range
// through the history's index, with who held them at the range's start
// (data.Replay); and who held them at an instant (data.OwnersAt). Each is
// one round trip.
func storeTimeline(ctx context.Context, store *data.Store) (func(LanesQuery) (History, error), func([]data.Key, time.Time) (Owners, error)) {
	// A read that reaches historyReadLimit returns the oldest events, up to
	// the instant of the last (History.ReadUntil).
	replayLanes := replayer(ctx, store)
	owners := func(keys []data.Key, at time.Time) (Owners, error) {
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
		return ownersOf(o), nil
	}
	timeline := func(q LanesQuery) (History, error) {
		lanes := q.Sessions.Limit
		q.Sessions.Limit++ // one more says whether more follow
		keys, err := store.Sessions(ctx, q.Sessions)
		if err != nil {
			return History{}, err
		}
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
		h, err := replayLanes(keys, q.Since)
		h.Keys, h.More = keys, more
		return h, err
	}
	return timeline, owners
}

// replayer returns storeTimeline's read of the lanes' history: who held
// keys at since and their events from then on.
func replayer(ctx context.Context, store *data.Store) func(keys []data.Key, since time.Time) (History, error) {
	const limit = historyReadLimit
	return func(keys []data.Key, since time.Time) (History, error) {
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
		start := ownersOf(r.Start)
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
		return History{Start: start, Events: append(evs, trunc...), ReadUntil: cut}, nil
	}
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
func ownersOf(o data.OwnersAt) Owners {
	out := Owners{Leases: make(map[data.Key]data.Lease, len(o.Holdings))}
	if !o.Whole {
		out.HistoryStart = o.HistoryStart
	}
	for _, h := range o.Holdings {
		out.Leases[h.Key] = h.Lease
		if !h.ExpiryKnown && !h.Expired {
			if out.Inexact == nil {
				out.Inexact = map[data.Key]time.Duration{}
			}
			out.Inexact[h.Key] = h.TTL
		}
	}
	return out
}
