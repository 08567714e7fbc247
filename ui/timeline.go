package ui

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The timeline view (issues 28, 38): one lane per session of the window's
// history, ended or not (data.Store.Sessions: the sessions that had a lease
// in the window, or an event), a page of them in key order from the session
// selected in the table, time running left to right over a zoomable window
// ending now. Scrubbing moves a cursor into the past: the header says "as
// of", each lane's right column says who held the session then (read from
// the history: OwnersAtFunc), and the events pane centres on that moment.
// The filter (/) finds sessions by id, holder label or run.
//
// The lanes and their history are read together (TimelineFunc), for a
// window and a half of the zoom, once per window: on opening, scrolling the
// lanes, filtering, zooming, and when the cursor leaves what was read. New
// events come from the feed, merged on the countdown tick, so the live
// picture costs no read. Which run held a session when is the model's
// (monitor.BuildLane); this package draws it.

// LanesQuery is a read of the timeline's lanes: a page of the sessions of
// a window of the history, and their history from Since to Until.
type LanesQuery struct {
	// Sessions is the page (its window is the one shown; Limit the lanes
	// the screen has room for).
	Sessions data.SessionsQuery
	// Since and Until are the history to read for the lanes: from before
	// the window (room to scrub) to now.
	Since, Until time.Time
}

// History is what TimelineFunc returns: the lanes' sessions, their events
// in the range, oldest first, and who held each at its start.
type History struct {
	// Keys are the lanes: the page of sessions, at most the query's
	// Sessions.Limit, in order. More says more sessions follow them.
	Keys []monitor.Key
	More bool
	// Start is who held each session at the range's start, or at the start
	// of the history kept if that is later (Owners.HistoryStart).
	Start  Owners
	Events []data.Event
	// ReadUntil, when not zero, says the read stopped at its cap
	// (historyReadLimit events): Events holds none at or after it, and the
	// lanes are not known from there.
	ReadUntil time.Time
}

// Owners is who held each of a set of sessions at one instant, as the
// history says: each lease with the expiry it had then. A session with no
// entry was held by nobody, or, before HistoryStart, is unknown.
type Owners struct {
	Leases map[monitor.Key]data.Lease
	// HistoryStart is the oldest event kept (prune_events removes older
	// ones); zero when nothing was ever pruned.
	HistoryStart time.Time
	// Inexact are the leases whose expiry then the history does not pin
	// (renewals write no event): their ExpiresAt is a lower bound, and the
	// TTL they were granted with (0: unknown) an upper bound of what was
	// left.
	Inexact map[monitor.Key]time.Duration
}

// zooms are the timeline's window lengths, from seconds to hours.
var zooms = []time.Duration{
	10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
}

// defaultZoom is 15 minutes.
const defaultZoom = 5

// timelineView is the timeline's state.
type timelineView struct {
	zoom     int
	page     lanePage      // which lanes: where their page of the window's sessions starts
	keys     []monitor.Key // the lanes' sessions, as the last read of page answered
	more     bool          // more sessions follow the lanes
	scrubbed bool          // the cursor is in the past; else the view is live
	cursor   time.Time     // the instant scrubbed to (server clock)
	end      time.Time     // the window's end while scrubbed

	gen     int          // the generation of the latest read asked
	asked   historyQuery // what it asked
	loaded  *historyData // the last read answered, with the live events merged
	loadErr error

	reading bool // a history read is in flight: one at a time, the answer asks again if need be

	owners     Owners // who held what at the cursor
	ownersAt   time.Time
	ownersOK   bool
	ownErr     error
	ownersBusy bool // an owners read is in flight
	ownersNext bool // and the cursor or the lanes moved since it was asked

	lanes   []monitor.Lane // built from loaded for lanesWin
	lanesOf lanesKey

	// The lanes' bars as last drawn, without the cursor: a frame that
	// changes neither the lanes nor the size draws none again (each bar is
	// tens of styled stretches), a scrub step only its cursor's column.
	bars   []drawnBar
	barsOf barsKey
}

type barsKey struct {
	lanes  lanesKey
	cols   int
	styles *timelineStyles
}

// lanePage is where a page of lanes starts among the window's sessions
// (see data.SessionsQuery): at or after from, or back sessions before it,
// or the last page; n lanes whose sessions match the filter.
type lanePage struct {
	from  monitor.Key
	after bool
	back  int
	last  bool
	n     int
	match string
}

// historyQuery is a read of the lanes and their history.
type historyQuery struct {
	page        lanePage
	win         window    // the window whose sessions the lanes are
	from, until time.Time // the history read
}

// historyData is a read answered, and the live events merged since.
type historyData struct {
	q       historyQuery
	keys    []monitor.Key // the lanes
	more    bool
	start   Owners
	until   time.Time                    // History.ReadUntil: zero when the read is whole
	byKey   map[monitor.Key][]data.Event // oldest first
	events  []data.Event                 // every event, newest first (for the events pane)
	maxID   map[string]int64             // the largest id read or merged, by context (ids are each database's)
	cursor  map[string]int64             // the newest of the State's events looked at (any session's), by context
	version int                          // changes with each merge
	merged  uint64                       // the State version merged last
	stale   bool                         // the feed moved past what could be merged: read again
}

type lanesKey struct {
	data    *historyData
	version int
	win     window
	live    uint64 // liveFingerprint of the lanes' live leases
}

// newHistoryData indexes a read's answer. Its page becomes the page that
// starts at its first lane, so that reading it again (the window moved)
// keeps the same first lane.
func newHistoryData(q historyQuery, h History) *historyData {
	if len(h.Keys) > 0 {
		q.page = lanePage{from: h.Keys[0], n: q.page.n, match: q.page.match}
	}
	d := &historyData{q: q, keys: h.Keys, more: h.More, start: h.Start, until: h.ReadUntil,
		byKey: map[monitor.Key][]data.Event{}, maxID: map[string]int64{}, cursor: map[string]int64{}}
	d.add(monitor.NamePrevHolders(h.Events, func(k monitor.Key) (data.Lease, bool) {
		l, ok := h.Start.Leases[k]
		return l, ok
	}))
	return d
}

// add merges events (any order), ignoring those already held.
func (d *historyData) add(evs []data.Event) {
	if len(evs) == 0 {
		return
	}
	want := make(map[monitor.Key]bool, len(d.keys))
	for _, k := range d.keys {
		want[k] = true
	}
	type eventID struct {
		context string
		id      int64
	}
	seen := map[eventID]bool{}
	for _, ev := range d.events {
		seen[eventID{ev.Context, ev.ID}] = true
	}
	touched := map[monitor.Key]bool{}
	for _, ev := range evs {
		truncated := ev.Kind == data.KindTruncated // names no session: it ends every lane's span of its context
		id := eventID{ev.Context, ev.ID}
		if (!want[monitor.EventKey(ev)] && !truncated) || seen[id] || ev.Kind == data.KindRenewed {
			continue
		}
		seen[id] = true
		keys := []monitor.Key{monitor.EventKey(ev)}
		if truncated {
			keys = slices.DeleteFunc(slices.Clone(d.keys), func(k monitor.Key) bool { return k.Context != ev.Context })
		}
		for _, k := range keys {
			d.byKey[k] = append(d.byKey[k], ev)
			touched[k] = true
		}
		d.events = append(d.events, ev)
		d.maxID[ev.Context] = max(d.maxID[ev.Context], ev.ID)
	}
	byTime := func(a, b data.Event) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Context, b.Context), cmp.Compare(a.ID, b.ID))
	}
	for k := range touched {
		slices.SortFunc(d.byKey[k], byTime)
	}
	slices.SortFunc(d.events, func(a, b data.Event) int { return byTime(b, a) })
	d.version++
}

// mergeLive adds the shown state's events newer than the data's, if the
// state changed since the last merge. When the state's kept events no longer
// reach back to what was read, some may be missing: the data is marked
// stale, to be read again. Ids are each context's own: newer is by context.
func (d *historyData) mergeLive(evs []data.Event, version uint64, limit int) {
	if d.merged == version {
		return
	}
	d.merged = version
	var fresh []data.Event
	newest := map[string]int64{}
	for _, ev := range evs {
		newest[ev.Context] = max(newest[ev.Context], ev.ID)
		if ev.ID > max(d.cursor[ev.Context], d.maxID[ev.Context]) {
			fresh = append(fresh, ev)
		}
	}
	if len(fresh) == len(evs) && len(evs) >= limit && len(fresh) > 0 {
		d.stale = true // the State no longer keeps every event since the last look
	}
	for c, id := range newest {
		d.cursor[c] = max(d.cursor[c], id)
	}
	d.add(fresh)
}

// liveFingerprint sums up what a lane takes from the live leases of keys at
// server time now: each one's run and fence, and its expiry once passed.
// Renewals elsewhere (every lease of a big fleet, every second) change the
// State's version, not this: the lanes are not rebuilt for them.
func liveFingerprint(st interface {
	LeaseOf(monitor.Key) (data.Lease, bool)
}, keys []monitor.Key, now time.Time) uint64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v int64) {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		_, _ = h.Write(b[:])
	}
	for _, k := range keys {
		l, ok := st.LeaseOf(k)
		if !ok {
			put(-1)
			continue
		}
		_, _ = h.Write(l.RunID[:])
		put(l.Fence)
		if !l.ExpiresAt.After(now) {
			put(l.ExpiresAt.UnixNano())
		}
	}
	return h.Sum64()
}
