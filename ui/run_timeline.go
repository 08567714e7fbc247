package ui

import (
	"context"
	"errors"
	"time"

	"github.com/leasetop/leasetop/data"
)

// historyReadLimit caps the events one read of the timeline's lanes returns.
const historyReadLimit = 50_000

// storeTimeline is the timeline's reads on store: the lanes' events by time
// range through the history's index (data.EventsBetween, keys = the lanes on
// screen), and who held them at an instant (data.OwnersAt).
func storeTimeline(ctx context.Context, store *data.Store) (func([]data.Key, time.Time, time.Time) (History, error), func([]data.Key, time.Time) (Owners, error)) {
	return storeTimelineCapped(ctx, store, historyReadLimit)
}

// storeTimelineCapped is storeTimeline with a read's cap of limit events:
// a read that reaches it returns the oldest, up to the instant of the last
// (History.ReadUntil).
func storeTimelineCapped(ctx context.Context, store *data.Store, limit int) (func([]data.Key, time.Time, time.Time) (History, error), func([]data.Key, time.Time) (Owners, error)) {
	owners := func(keys []data.Key, at time.Time) (Owners, error) {
		o, err := store.OwnersAt(ctx, at, data.HistoryFilter{Keys: keys})
		if errors.Is(err, data.ErrHistoryPruned) {
			return Owners{HistoryStart: o.HistoryStart}, nil // nothing can be told: the view says so
		}
		if err != nil {
			return Owners{}, err
		}
		return ownersOf(o), nil
	}
	timeline := func(keys []data.Key, since, until time.Time) (History, error) {
		start, err := owners(keys, since)
		if err != nil {
			return History{}, err
		}
		if hs := start.HistoryStart; len(start.Leases) == 0 && hs.After(since) {
			// The window starts before the history kept: replay from where it starts.
			if start, err = owners(keys, hs); err != nil {
				return History{}, err
			}
			since = hs
		}
		// Since is inclusive: an event at since is in the start too, and
		// replaying it again changes no lane (it starts the span it started,
		// or ends none), but the events pane and n/N need it.
		evs, err := store.EventsBetween(ctx, data.HistoryFilter{Keys: keys, Since: since, Limit: limit})
		if err != nil {
			return History{}, err
		}
		var cut time.Time
		if len(evs) == limit {
			// The cap: the oldest limit events, whose last one's instant may
			// have more not read. The lanes are known up to it, not after.
			cut = evs[len(evs)-1].At
			evs = beforeTime(evs, cut)
		}
		// A TRUNCATE's event names no session (its ids are ''), so the
		// keys' read does not see it; it ends every lane's span. Read as the
		// events of the key ('', ''), it is a range of the same index, not
		// a scan of the window's every event (at 1000 transitions a second,
		// 900,000 in 15 minutes: 360 ms against 0.1).
		trunc, err := store.EventsBetween(ctx, data.HistoryFilter{Keys: []data.Key{{}}, Kinds: []data.Kind{data.KindTruncated}, Since: since})
		if err != nil {
			return History{}, err
		}
		if !cut.IsZero() {
			trunc = beforeTime(trunc, cut)
		}
		return History{Start: start, Events: append(evs, trunc...), ReadUntil: cut}, nil
	}
	return timeline, owners
}

// beforeTime returns the events (oldest first) before t.
func beforeTime(evs []data.Event, t time.Time) []data.Event {
	n := len(evs)
	for n > 0 && !evs[n-1].At.Before(t) {
		n--
	}
	return evs[:n]
}

// ownersOf is the history's answer as the view takes it.
func ownersOf(o data.OwnersAt) Owners {
	out := Owners{Leases: make(map[data.Key]data.Lease, len(o.Holdings)), HistoryStart: o.HistoryStart}
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
