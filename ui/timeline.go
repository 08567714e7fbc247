package ui

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/monitor"
)

// The timeline view (issue 28): one lane per session, the table's rows in
// its order and filter as they were when the view opened or scrolled, time
// running left to right over a zoomable window ending now. Scrubbing moves a
// cursor into the past: the header says "as of", each lane's right column
// says who held the session then (read from the history: OwnersAtFunc), and
// the events pane centres on that moment.
//
// History is read for the lanes on screen only, for a window and a half of
// the zoom (TimelineFunc), once per window: on opening, scrolling the lanes,
// zooming, and when the cursor leaves what was read. New events come from
// the feed, merged on the countdown tick, so the live picture costs no read.

// History is what TimelineFunc returns: the sessions' events in the range,
// oldest first, and who held each at its start.
type History struct {
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
	Leases map[data.Key]data.Lease
	// HistoryStart is the oldest event kept (prune_events removes older
	// ones); zero when nothing was ever pruned.
	HistoryStart time.Time
	// Inexact are the leases whose expiry then the history does not pin
	// (renewals write no event): their ExpiresAt is a lower bound, and the
	// TTL they were granted with (0: unknown) an upper bound of what was
	// left.
	Inexact map[data.Key]time.Duration
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
	top      int        // the table row of the first lane
	keys     []data.Key // the lanes' sessions, fixed when the view opened or scrolled
	scrubbed bool       // the cursor is in the past; else the view is live
	cursor   time.Time  // the instant scrubbed to (server clock)
	end      time.Time  // the window's end while scrubbed

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

	lanes   []lane // built from loaded for lanesWin
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

// historyQuery is a read of the lanes' history.
type historyQuery struct {
	keys        []data.Key
	from, until time.Time
}

// historyData is a read answered, and the live events merged since.
type historyData struct {
	q       historyQuery
	start   Owners
	until   time.Time                 // History.ReadUntil: zero when the read is whole
	byKey   map[data.Key][]data.Event // oldest first
	events  []data.Event              // every event, newest first (for the events pane)
	maxID   int64                     // the largest id read or merged
	cursor  int64                     // the newest of the State's events looked at (any session's)
	version int                       // changes with each merge
	merged  uint64                    // the State version merged last
	stale   bool                      // the feed moved past what could be merged: read again
}

type lanesKey struct {
	data    *historyData
	version int
	win     window
	live    uint64 // liveFingerprint of the lanes' live leases
}

// newHistoryData indexes a read's answer.
func newHistoryData(q historyQuery, h History) *historyData {
	d := &historyData{q: q, start: h.Start, until: h.ReadUntil, byKey: map[data.Key][]data.Event{}}
	d.add(monitor.NamePrevHolders(h.Events, func(k data.Key) (data.Lease, bool) {
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
	want := make(map[data.Key]bool, len(d.q.keys))
	for _, k := range d.q.keys {
		want[k] = true
	}
	seen := map[int64]bool{}
	for _, ev := range d.events {
		seen[ev.ID] = true
	}
	touched := map[data.Key]bool{}
	for _, ev := range evs {
		truncated := ev.Kind == data.KindTruncated // names no session: it ends every lane's span
		if (!want[ev.Key] && !truncated) || seen[ev.ID] || ev.Kind == data.KindRenewed {
			continue
		}
		seen[ev.ID] = true
		keys := []data.Key{ev.Key}
		if truncated {
			keys = d.q.keys
		}
		for _, k := range keys {
			d.byKey[k] = append(d.byKey[k], ev)
			touched[k] = true
		}
		d.events = append(d.events, ev)
		d.maxID = max(d.maxID, ev.ID)
	}
	byTime := func(a, b data.Event) int { return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ID, b.ID)) }
	for k := range touched {
		slices.SortFunc(d.byKey[k], byTime)
	}
	slices.SortFunc(d.events, func(a, b data.Event) int { return byTime(b, a) })
	d.version++
}

// mergeLive adds the shown state's events newer than the data's, if the
// state changed since the last merge. When the state's kept events no longer
// reach back to what was read, some may be missing: the data is marked
// stale, to be read again.
func (d *historyData) mergeLive(evs []data.Event, version uint64, limit int) {
	if d.merged == version {
		return
	}
	d.merged = version
	from := max(d.cursor, d.maxID)
	n := 0
	for n < len(evs) && evs[n].ID > from {
		n++
	}
	if n == len(evs) && len(evs) >= limit && n > 0 {
		d.stale = true // the State no longer keeps every event since the last look
	}
	if n > 0 {
		d.cursor = max(d.cursor, evs[0].ID)
	}
	d.add(evs[:n])
}

// lanesKeys returns the sessions of the table rows from top, at most n.
func (m *Model) laneKeys(top, n int) []data.Key {
	top = min(max(top, 0), max(len(m.rows)-1, 0))
	end := min(top+n, len(m.rows))
	keys := make([]data.Key, 0, max(end-top, 0))
	for i := top; i < end; i++ {
		if k, ok := m.rowKey(i); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// liveFingerprint sums up what a lane takes from the live leases of keys at
// server time now: each one's run and fence, and its expiry once passed.
// Renewals elsewhere (every lease of a big fleet, every second) change the
// State's version, not this: the lanes are not rebuilt for them.
func liveFingerprint(st interface {
	Lease(data.Key) (data.Lease, bool)
}, keys []data.Key, now time.Time) uint64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v int64) {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		_, _ = h.Write(b[:])
	}
	for _, k := range keys {
		l, ok := st.Lease(k)
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
