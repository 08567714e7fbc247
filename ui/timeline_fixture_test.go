package ui

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// timelineHistory is the loaded fixture's history over the last 15 minutes,
// oldest first: loadedEvents and what came before. Before it globex's
// session was already held (since two hours) by device-3.
func timelineHistory() []data.Event {
	at := func(ago time.Duration) time.Time { return server.Add(-ago) }
	k := func(a, s string) data.Key { return data.Key{Account: a, Session: s} }
	c7, c9, ini, umb := k("acme", "chat-7f3a"), k("acme", "chat-9b21"), k("initech", "batch-nightly"), k("umbrella", "s1")
	evs := []data.Event{
		{ID: 1, Kind: data.KindAcquired, At: at(12 * time.Minute), Key: c7, RunID: run(11), Fence: 30, Holder: "device-5", ExpiresAt: at(11*time.Minute + 45*time.Second)},
		{ID: 2, Kind: data.KindAcquired, At: at(10 * time.Minute), Key: ini, RunID: run(4), Fence: 7, Holder: "cron@host-a", ExpiresAt: at(9*time.Minute + 45*time.Second)},
		{ID: 3, Kind: data.KindAcquired, At: at(9 * time.Minute), Key: c9, RunID: run(12), Fence: 31, Holder: "device-7", ExpiresAt: at(8*time.Minute + 45*time.Second)},
		{ID: 4, Kind: data.KindAcquired, At: at(8 * time.Minute), Key: umb, RunID: run(13), Fence: 1, Holder: "worker-a", ExpiresAt: at(7*time.Minute + 30*time.Second)},
		{ID: 5, Kind: data.KindPreempted, At: at(7 * time.Minute), Key: umb, RunID: run(14), PrevRunID: run(13), Fence: 2, PrevFence: 1, Holder: "worker-b", ExpiresAt: at(6*time.Minute + 30*time.Second)},
		{ID: 6, Kind: data.KindForceReleased, At: at(6 * time.Minute), Key: c9, RunID: run(12), Fence: 31, Actor: "alice", Reason: "stuck"},
		{ID: 7, Kind: data.KindHandedOver, At: at(5*time.Minute + 30*time.Second), Key: umb, RunID: run(15), PrevRunID: run(14), Fence: 3, PrevFence: 2, Holder: "worker-c", ExpiresAt: at(5 * time.Minute)},
		{ID: 8, Kind: data.KindReleased, At: at(5 * time.Minute), Key: c7, RunID: run(11), Fence: 30},
		{ID: 9, Kind: data.KindTakenOver, At: at(4 * time.Minute), Key: umb, RunID: run(16), PrevRunID: run(15), Fence: 4, PrevFence: 3, Holder: "worker-a",
			ExpiresAt: at(3*time.Minute + 30*time.Second), PrevExpiresAt: at(4*time.Minute + 40*time.Second)},
		{ID: 10, Kind: data.KindAcquired, At: at(3*time.Minute + 12*time.Second), Key: c7, RunID: run(1), Fence: 41, Holder: "device-1", ExpiresAt: at(3 * time.Minute)},
		{ID: 11, Kind: "queue_joined", At: at(2 * time.Minute), Key: umb, RunID: run(17), Fence: 0},
		{ID: 12, Kind: data.KindReleased, At: at(90 * time.Second), Key: umb, RunID: run(16), Fence: 4},
		// hooli's two sessions, released and force-released in loadedEvents.
		{ID: 13, Kind: data.KindAcquired, At: at(3 * time.Minute), Key: k("hooli", "s9"), RunID: run(7), Fence: 39, Holder: "device-9", ExpiresAt: at(15 * time.Second)},
		{ID: 14, Kind: data.KindAcquired, At: at(150 * time.Second), Key: k("hooli", "s8"), RunID: run(8), Fence: 38, Holder: "device-8", ExpiresAt: at(5 * time.Second)},
	}
	for _, ev := range loadedEvents() {
		ev.ID += 1000
		evs = append(evs, ev)
	}
	return evs
}

// timelineBefore is who held what before the fixture's history starts.
func timelineBefore() map[data.Key]data.Lease {
	l := loadedLeases()[2] // globex, held by device-3 for two hours
	l.ExpiresAt = server.Add(-14*time.Minute + 15*time.Second)
	return map[data.Key]data.Lease{l.Key: l}
}

// fixtureOwnersAt replays the fixture's history to t: who held keys (nil:
// every session) then,
// each with the expiry its last event gave it. historyStart, if set, is
// where the history is said to start (older events pruned).
func fixtureOwnersAt(keys []data.Key, t, historyStart time.Time) Owners {
	out := Owners{Leases: map[monitor.Key]data.Lease{}, HistoryStart: historyStart}
	want := func(k data.Key) bool { return keys == nil || slices.Contains(keys, k) }
	for k, l := range timelineBefore() {
		if want(k) {
			out.Leases[mkey(k)] = l
		}
	}
	for _, ev := range timelineHistory() {
		if ev.At.After(t) || !want(ev.Key) {
			continue
		}
		switch ev.Kind {
		case data.KindAcquired, data.KindTakenOver, data.KindPreempted, data.KindHandedOver:
			out.Leases[mkey(ev.Key)] = data.Lease{Key: ev.Key, RunID: ev.RunID, Holder: ev.Holder, Fence: ev.Fence,
				AcquiredAt: ev.At, RenewedAt: ev.At, ExpiresAt: ev.ExpiresAt}
		case data.KindReleased, data.KindForceReleased:
			delete(out.Leases, mkey(ev.Key))
		}
	}
	// Renewals write no event: a run that still holds its session now was
	// renewing then, every TTL (15 s here).
	for _, live := range loadedLeases() {
		if l, ok := out.Leases[mkey(live.Key)]; ok && l.RunID == live.RunID && l.Fence == live.Fence {
			l.ExpiresAt = minTime(live.ExpiresAt, t.Add(15*time.Second))
			out.Leases[mkey(live.Key)] = l
		}
	}
	if !historyStart.IsZero() && t.Before(historyStart) {
		return Owners{HistoryStart: historyStart}
	}
	return out
}

// keyOrder orders keys by account, then session.
func keyOrder(a, b data.Key) int {
	return cmp.Or(strings.Compare(a.Account, b.Account), strings.Compare(a.Session, b.Session))
}

// pageOf is the page q asks of the sessions keys (sorted by keyOrder) that
// match q.Match, as data.Store.Sessions pages them; more says more follow.
func pageOf(keys []data.Key, q data.SessionsQuery) (page []data.Key, more bool) {
	kept := keys
	if q.Match != "" {
		kept = nil
		for _, k := range keys {
			if strings.Contains(strings.ToLower(k.Account+"\x00"+k.Session), strings.ToLower(q.Match)) {
				kept = append(kept, k)
			}
		}
	}
	start := 0
	switch {
	case q.Last:
		start = max(len(kept)-q.Limit, 0)
	default:
		start, _ = slices.BinarySearchFunc(kept, q.From, keyOrder)
		if q.After && start < len(kept) && kept[start] == q.From {
			start++
		}
		start = max(start-q.Back, 0)
	}
	end := min(start+q.Limit, len(kept))
	return kept[start:end], end < len(kept)
}

// fixtureSessions are the fixture's sessions that had a lease or an event
// in [since, until): the live leases acquired before until (loadedLeases
// and extra), the sessions held at since, and those with events in the
// window; in key order.
func fixtureSessions(since, until, pruned time.Time, extra []data.Lease) []data.Key {
	set := map[data.Key]bool{}
	for _, l := range append(loadedLeases(), extra...) {
		if l.AcquiredAt.Before(until) {
			set[l.Key] = true
		}
	}
	for k := range fixtureOwnersAt(nil, maxTime(since, pruned), pruned).Leases {
		set[k.Key] = true
	}
	for _, ev := range timelineHistory() {
		if !ev.At.Before(since) && ev.At.Before(until) {
			set[ev.Key] = true
		}
	}
	keys := slices.Collect(maps.Keys(set))
	slices.SortFunc(keys, keyOrder)
	return keys
}

// withHistory gives the model the fixture's history; with pruned set,
// the history before it is said to be pruned.
func withHistory(pruned time.Time) func(*Config) { return withHistoryAnd(pruned, nil) }

// withHistoryAnd is withHistory with more live leases than loadedLeases:
// the lanes include their sessions.
func withHistoryAnd(pruned time.Time, extra []data.Lease) func(*Config) {
	return func(c *Config) {
		c.Source.TimelineFunc = func(q LanesQuery) (History, error) {
			keys, more := pageOf(fixtureSessions(q.Sessions.Since, q.Sessions.Until, pruned, extra), q.Sessions)
			since := q.Since
			h := History{Keys: mkeys(keys), More: more, Start: fixtureOwnersAt(keys, maxTime(since, pruned), pruned)}
			for _, ev := range timelineHistory() {
				if slices.Contains(keys, ev.Key) && ev.At.After(maxTime(since, pruned)) && !ev.At.After(q.Until) {
					h.Events = append(h.Events, ev)
				}
			}
			return h, nil
		}
		c.Source.OwnersAtFunc = func(keys []monitor.Key, at time.Time) (Owners, error) {
			return fixtureOwnersAt(dkeys(keys), at, pruned), nil
		}
	}
}

// drain runs cmd as Bubble Tea would, feeding the model what it returns
// (batches included), for the timeline's reads. It never runs a tick, nor
// follows a text field's cursor blinks (each asks for the next).
func drain(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if msg != nil && reflect.TypeOf(msg).PkgPath() == "charm.land/bubbles/v2/cursor" {
		return
	}
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			drain(m, c)
		}
	case nil:
	default:
		_, next := m.Update(msg)
		if _, isTick := msg.(tickMsg); !isTick {
			drain(m, next)
		}
	}
}

// pressDrain presses keys, running each one's reads.
func pressDrain(m *Model, keys ...string) {
	for _, k := range keys {
		drain(m, press(m, k))
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// mkey is k in a monitor of one database.
func mkey(k data.Key) monitor.Key { return monitor.Key{Key: k} }

// mkeys are keys in a monitor of one database.
func mkeys(keys []data.Key) []monitor.Key {
	out := make([]monitor.Key, len(keys))
	for i, k := range keys {
		out[i] = mkey(k)
	}
	return out
}

// dkeys are the data.Keys of keys.
func dkeys(keys []monitor.Key) []data.Key {
	out := make([]data.Key, len(keys))
	for i, k := range keys {
		out[i] = k.Key
	}
	return out
}
