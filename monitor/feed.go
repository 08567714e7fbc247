package monitor

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// FeedConfig configures a Feed. Zero fields take the documented defaults.
type FeedConfig struct {
	// Listener configures the notification listener.
	Listener data.ListenerConfig
	// DeltaInterval is how often renewals are read when the database sends
	// no renewal notifications. Default 1 s.
	DeltaInterval time.Duration
	// NotifiedInterval is how often the leases are read when renewal
	// notifications are on: only to measure the clock and prove the
	// connection. Default 1 s, as DeltaInterval: the header leaves LIVE
	// when a read goes unanswered for this plus NoAnswerAfter.
	NotifiedInterval time.Duration
	// DeltaOverlap is how far before the previous read a delta read starts:
	// a renewal's renewed_at is sampled before its transaction commits.
	// Default 3 s.
	DeltaOverlap time.Duration
	// Since, when true, makes the first resync return the events with
	// id > After. Otherwise it returns the last Tail ids' worth.
	Since bool
	After int64
	// Tail is how many ids of history the first resync loads. Default 500.
	Tail int64
	// Window is how many ids below the highest delivered one every later
	// resync re-reads, for events that committed late. Default 1000.
	Window int64
	// ResyncLimit caps the events one resync reads. Default 10000.
	ResyncLimit int
	// MaxPending caps the items waiting for a slow consumer; past it they
	// are dropped and replaced by a resync. Default 20000.
	MaxPending int
	// ReadTimeout bounds each read: a read (a resync, which reads every
	// lease, a delta read, a notification's read-back) is cut off only when
	// it receives nothing for ReadTimeout: one of a million leases that
	// keeps arriving may take longer. Default 10 s.
	ReadTimeout time.Duration
	// MinResyncInterval is the least time between the starts of two
	// resyncs; one asked for sooner (a dropped notification, a truncation,
	// Resync) waits for it, and requests meanwhile coalesce. Anyone who may
	// connect can make the listener drop notifications by flooding the
	// channel, so this bounds what that costs the database. A resync cut at
	// ResyncLimit pages on at once; one that failed is tried again after
	// MinResyncInterval. Default 1 s.
	MinResyncInterval time.Duration
	// SweepPages is the most pages of the lease table one delta read scans:
	// a larger table is read a slice a read, round robin (sweep.go), and
	// the view of a renewal is then up to a whole pass old. Default
	// DefaultSweepPages; negative: the whole table every read.
	SweepPages int
}

func (c FeedConfig) withDefaults() FeedConfig {
	c.DeltaInterval = cmp.Or(c.DeltaInterval, time.Second)
	c.NotifiedInterval = cmp.Or(c.NotifiedInterval, time.Second)
	c.DeltaOverlap = cmp.Or(c.DeltaOverlap, 3*time.Second)
	c.Tail = cmp.Or(c.Tail, 500)
	c.Window = cmp.Or(c.Window, 1000)
	c.ResyncLimit = cmp.Or(c.ResyncLimit, 10000)
	c.MaxPending = cmp.Or(c.MaxPending, 20000)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, 10*time.Second)
	c.MinResyncInterval = cmp.Or(c.MinResyncInterval, time.Second)
	c.SweepPages = cmp.Or(c.SweepPages, DefaultSweepPages)
	return c
}

// Feed keeps a State true: it owns a data.Listener and the periodic reads,
// and gathers what they deliver into batches that its consumer takes with
// Next. It never blocks on the consumer. A Feed runs once.
type Feed struct {
	store *data.Store
	cfg   FeedConfig

	resyncReq chan struct{} // Resync's requests
	ready     chan struct{} // something is pending
	done      chan struct{} // Run returned

	mu        sync.Mutex
	items     []Item
	dirty     bool // conn or counters changed since the last take
	conn      data.ListenerState
	readErr   error
	malformed int64
	dropped   int64
	notify    bool
	delivered int64 // highest event id handed to the consumer
	highest   int64 // highest event id delivered or pending
	baseline  int64 // the first resync's After
	synced    bool  // a resync succeeded
	drops     int64 // listener drops already accounted for in floor
	floor     int64 // the next resync reads from here at the latest (math.MaxInt64: no floor)
	pageFrom  int64 // a resync was cut at Limit: the next one continues after this id (0: none)
	awaitSync bool  // a resync is due that covers every notification until then
	truncated int64 // highest id of a truncated event acted on
	// renewalsAge is how old the view of a renewal may be beyond the read
	// interval: a whole pass of the sweep (0 while one read reads it all).
	renewalsAge time.Duration

	sweep sweep // where the delta reads are in the lease table; Run's goroutine only
	sized int   // leases the last resync read, the room the next makes; Run's goroutine only
}

// NewFeed returns a feed on store's database. Start it with Run.
func NewFeed(store *data.Store, cfg FeedConfig) *Feed {
	return &Feed{
		store:     store,
		cfg:       cfg.withDefaults(),
		resyncReq: make(chan struct{}, 1),
		ready:     make(chan struct{}, 1),
		done:      make(chan struct{}),
		conn:      data.ListenerState{Status: data.ListenerConnecting, Since: time.Now()},
		floor:     math.MaxInt64,
		sweep:     sweep{size: int64(max(cfg.withDefaults().SweepPages, 0))},
	}
}

// Resync asks the feed to re-read the leases and the recent events. It
// never blocks; requests made while one is pending coalesce.
func (f *Feed) Resync() { signal(f.resyncReq) }

// Done is closed when Run has returned.
func (f *Feed) Done() <-chan struct{} { return f.done }

// Next waits until something is pending and returns it all as one batch. It
// returns false once Run has returned and nothing is left.
func (f *Feed) Next() (Batch, bool) {
	for {
		if b, ok := f.take(); ok {
			return b, true
		}
		select {
		case <-f.ready:
		case <-f.done:
			return f.take()
		}
	}
}

// Ready receives a value when something may be pending, for a consumer
// that waits in a select loop of its own (the demo's): it then takes it
// with Take. Next is Ready and Take in one call; use one or the other.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// Take returns what is pending as one batch, without waiting; false when
// nothing is.
func (f *Feed) Take() (Batch, bool) { return f.take() }

// take returns and clears what is pending.
func (f *Feed) take() (Batch, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.items) == 0 && !f.dirty {
		return Batch{}, false
	}
	b := Batch{
		Items: f.items, Conn: f.conn, ReadErr: f.readErr,
		Malformed: f.malformed, Dropped: f.dropped, NotifyRenewals: f.notify,
		ReadInterval: f.intervalLocked(),
		RenewalsAge:  f.renewalsAge,
	}
	f.items, f.dirty = nil, false
	f.delivered = f.highest
	return b, true
}

// Run listens and reads until ctx is cancelled, then stops the listener and
// returns nil. The listener's deliveries, the resyncs asked for and the
// periodic reads are served on one goroutine (data.Listener.Serve, with the
// feed's loop as the handler: feed_loop.go).
func (f *Feed) Run(ctx context.Context) error {
	defer close(f.done)
	lis := f.store.NewListener(f.cfg.Listener)
	loop := newFeedLoop(f, lis)
	defer loop.timer.Stop()
	_ = lis.Serve(ctx, loop) // a listener that cannot start says so in its state
	f.setConn(data.ListenerState{Status: data.ListenerStopped, Since: time.Now()}, lis)
	return nil
}

// receive queues a delivery of events from the listener: rows of
// lease.event as they are, notifications once read back from the database.
func (f *Feed) receive(ctx context.Context, b data.Delivery, lis *data.Listener) {
	f.noteDrops(lis)
	if b.Origin != data.FromNotify {
		f.receiveRows(ctx, b.Events)
		return
	}
	for notes := range slices.Chunk(b.Events, verifyChunk) {
		f.receiveNotes(ctx, notes, lis)
	}
}

// verifyChunk is how many notifications one read-back reads at most.
const verifyChunk = 1024

// receiveRows queues rows the listener read from lease.event: in poll mode
// (a hot standby, a transaction pooler without a listen DSN, or
// FeedConfig.Listener.Poll) every transition, and while listening those
// whose notification never came. Each event comes once, in id order, with
// the gaps that ids which commit late leave filled when they commit. They
// are the table's own, so the feed queues them as they are, without reading
// them back. In poll mode everything else stays: the first resync, the
// delta reads of renewals (every DeltaInterval, since renewal notifications
// are not heard), and resyncs on request; Batch.Conn says POLL with the
// interval and why (Health's LinkPoll, Poll and PollReason).
func (f *Feed) receiveRows(ctx context.Context, rows []data.Event) {
	f.mu.Lock()
	awaiting := f.awaitSync
	f.mu.Unlock()
	if awaiting {
		// The coming resync reads the events above where it starts; one
		// below it (it committed long after its id was drawn) only this
		// batch delivers.
		if rows, _ = splitBelow(rows, f.resyncFrom()); len(rows) == 0 {
			return
		}
	}
	items := make([]Item, len(rows))
	for i := range rows {
		items[i] = Item{Event: &rows[i]}
	}
	f.queue(ctx, items)
}

// receiveNotes queues notifications, read back from the database (see
// verify).
func (f *Feed) receiveNotes(ctx context.Context, notes []data.Event, lis *data.Listener) {
	f.mu.Lock()
	awaiting := f.awaitSync
	f.malformed, f.dropped = lis.Malformed(), lis.Dropped()
	f.mu.Unlock()
	if awaiting {
		// The coming resync reads the events above where it starts, if they
		// have committed by then (a notification may come before its row
		// does: the listener delivers those later). An event below it (one
		// that committed long after its id was drawn) only this read-back
		// delivers.
		var below []data.Event
		notes = slices.DeleteFunc(notes, func(n data.Event) bool { return n.Kind == data.KindRenewed })
		below, notes = splitBelow(notes, f.resyncFrom())
		lis.Missing(transitionIDs(notes))
		if notes = below; len(notes) == 0 {
			return
		}
	}
	items, err := f.verify(ctx, notes, lis)
	if err != nil {
		if ctx.Err() == nil {
			f.setReadErr(err)
			f.mu.Lock()
			f.floor = min(f.floor, max(f.highest-f.cfg.Window, 0))
			f.awaitSync = true
			f.mu.Unlock()
			f.Resync() // it reads what these notifications named
		}
		return
	}
	f.queue(ctx, items)
}

// queue appends what was received to the pending batch, or, when the
// consumer is too far behind, replaces it all with a resync.
func (f *Feed) queue(ctx context.Context, items []Item) {
	now := time.Now()
	truncated := false
	f.mu.Lock()
	prev := f.highest
	for _, it := range items {
		it.At = now
		f.push(it)
		truncated = f.noteTruncated(it.Event) || truncated
	}
	jumped := f.noteFailoverLocked(prev)
	overflow := len(f.items) > f.cfg.MaxPending
	if overflow {
		// The consumer is far behind: drop what it has not taken, and give it
		// one resync instead, before anything else. The resync starts a
		// window below the newest event delivered (and never below the
		// first resync): an event below that (its transaction was held
		// open) is kept.
		f.highest, f.awaitSync = f.delivered, true
		from := f.resyncFromLocked()
		f.items = slices.DeleteFunc(f.items, func(it Item) bool { return it.Event == nil || it.Event.ID > from })
	}
	f.mu.Unlock()
	signal(f.ready)
	if (overflow || truncated || jumped) && ctx.Err() == nil {
		f.Resync()
	}
}

// noteTruncated reports whether ev is a truncation of the lease table that
// the feed has not acted on yet; f.mu must be held. ev was read back from
// lease.event, so a forged "truncated" notification never gets here, and a
// replayed one is not new.
func (f *Feed) noteTruncated(ev *data.Event) bool {
	if ev == nil || ev.Kind != data.KindTruncated || ev.ID <= f.truncated {
		return false
	}
	f.truncated = ev.ID
	return true
}

// paging reports whether the last resync was cut at ResyncLimit and the next
// one continues it.
func (f *Feed) paging() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pageFrom > 0
}

// noteDrops lowers the next resync's starting point when the listener has
// dropped events since the last look. The listener drops the newest events
// (its queue is full of older ones), so every dropped id is above what the
// feed had received before it looked, less the window for late commits; the
// resync must read from there, or a drop followed by more received events
// would move the usual window past the dropped ids.
func (f *Feed) noteDrops(lis *data.Listener) {
	d := lis.Dropped()
	f.mu.Lock()
	defer f.mu.Unlock()
	if d > f.drops {
		f.drops = d
		f.floor = min(f.floor, max(f.highest-f.cfg.Window, 0))
	}
}

// resyncFrom is the id after which the coming resync reads every event
// (math.MaxInt64 when it reads only the newest, the first time).
func (f *Feed) resyncFrom() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resyncFromLocked()
}

// resyncFromLocked is resyncFrom with f.mu held.
func (f *Feed) resyncFromLocked() int64 {
	if q := f.queryLocked(); q.Oldest || q.After >= 0 {
		return q.After
	}
	return math.MaxInt64
}

// splitBelow splits evs into those with an id at or below from and the
// rest, each in its order.
func splitBelow(evs []data.Event, from int64) (below, above []data.Event) {
	for _, ev := range evs {
		if ev.ID <= from {
			below = append(below, ev)
		} else {
			above = append(above, ev)
		}
	}
	return below, above
}

// transitionIDs returns the event ids that notes name (renewals name none).
func transitionIDs(notes []data.Event) []int64 {
	var ids []int64
	for _, n := range notes {
		if n.Kind != data.KindRenewed {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// verify turns notifications into what the database says. Anyone who can
// connect may NOTIFY on lease_events, so a payload is only a claim: a
// transition names the event id to read from lease.event
// (data.Listener.ReadBack: a forged id with no row is dropped, and a forged
// payload never shadows the real row that later takes its id), and a
// renewal names the session whose lease to read. Rows keep the
// notifications' order, which is commit order. A notification may come
// before its row commits (a role that writes events can send one for its
// own transition): ReadBack tells the listener the ids it found no row
// for, and the listener delivers each when it commits.
func (f *Feed) verify(ctx context.Context, notes []data.Event, lis *data.Listener) ([]Item, error) {
	var keys []data.Key
	for _, n := range notes {
		if n.Kind == data.KindRenewed {
			keys = append(keys, n.Key)
		}
	}
	rctx, touch, stop := idleContext(ctx, f.cfg.ReadTimeout)
	defer stop()
	rctx = data.WithReadProgress(rctx, touch)
	rows, err := lis.ReadBack(rctx, notes)
	if err != nil {
		return nil, stalled(rctx, err)
	}
	items := make([]Item, 0, len(rows)+1)
	for i := range rows {
		items = append(items, Item{Event: &rows[i]})
	}
	if len(keys) > 0 {
		snap, err := f.store.LeasesFor(rctx, keys)
		if err != nil {
			lis.Missing(transitionIDs(notes)) // the rows read are dropped with the rest
			return nil, stalled(rctx, err)
		}
		items = append(items, Item{Delta: &snap})
	}
	return items, nil
}

// push appends an item; f.mu must be held.
func (f *Feed) push(it Item) {
	f.items = append(f.items, it)
	if it.Event != nil {
		f.highest = max(f.highest, it.Event.ID)
	}
	if it.Sync != nil && len(it.Sync.Events) > 0 {
		f.highest = max(f.highest, it.Sync.Events[len(it.Sync.Events)-1].ID)
	}
}

func (f *Feed) setConn(st data.ListenerState, lis *data.Listener) {
	f.mu.Lock()
	f.conn, f.dirty = st, true
	f.malformed, f.dropped = lis.Malformed(), lis.Dropped()
	f.mu.Unlock()
	signal(f.ready)
}

func (f *Feed) setReadErr(err error) {
	f.mu.Lock()
	f.readErr, f.dirty = err, true
	f.mu.Unlock()
	signal(f.ready)
}

// interval is how often the feed reads the database now.
func (f *Feed) interval() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.intervalLocked()
}

// intervalLocked is interval with f.mu held.
func (f *Feed) intervalLocked() time.Duration {
	if f.notify && f.conn.Poll == 0 { // polling, renewal notifications are not heard
		return f.cfg.NotifiedInterval
	}
	return f.cfg.DeltaInterval
}

// query is the next resync's event range: the configured start the first
// time, then a window below the highest id the consumer received.
func (f *Feed) query() data.SyncQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queryLocked()
}

// queryLocked is query with f.mu held.
func (f *Feed) queryLocked() data.SyncQuery {
	q := data.SyncQuery{Limit: f.cfg.ResyncLimit}
	switch {
	case f.synced && f.pageFrom > 0:
		q.After, q.Oldest = f.pageFrom, true
	case f.synced:
		q.After, q.Oldest = max(f.baseline, min(f.delivered-f.cfg.Window, f.floor), 0), true
	case f.cfg.Since:
		q.After = max(f.cfg.After, 0)
	default:
		q.After, q.Tail = -1, f.cfg.Tail
	}
	return q
}

// resync reads the leases and the recent events; it reports success.
func (f *Feed) resync(ctx context.Context) bool {
	rctx, touch, stop := idleContext(ctx, f.cfg.ReadTimeout)
	defer stop()
	q := f.query()
	q.Progress = touch
	// The leases go straight into columns as they arrive, here rather
	// than on the consumer's goroutine, and never all as data.Lease: at a
	// million that held some 180 MB beside the columns.
	table := &resyncTable{}
	table.t.reset(f.sized)
	q.Each = table.t.put
	sync, err := f.store.ReadSync(rctx, q)
	if err != nil {
		if ctx.Err() == nil {
			f.setReadErr(stalled(rctx, err))
		}
		return false
	}
	touch()
	at := time.Now()
	notify, nerr := f.store.NotifyRenewals(rctx)
	f.mu.Lock()
	if !f.synced {
		f.baseline, f.synced = sync.After, true
	}
	if nerr == nil {
		f.notify = notify
	}
	f.readErr = nil
	f.floor, f.pageFrom, f.awaitSync = math.MaxInt64, 0, false
	for i := range sync.Events {
		f.noteTruncated(&sync.Events[i]) // read here: no resync for its notification
	}
	more := q.Oldest && sync.Truncated && len(sync.Events) > 0
	if more {
		// Cut at Limit, oldest first: the next resync reads on from here, so
		// this is no gap.
		f.pageFrom, sync.Truncated = sync.Events[len(sync.Events)-1].ID, false
	}
	f.sized = table.t.live
	f.push(Item{Sync: &sync, At: at, table: table})
	f.mu.Unlock()
	f.sweep.reset(sync.Clock.At(at).Add(-f.cfg.DeltaOverlap))
	signal(f.ready)
	if more {
		f.Resync()
	}
	return true
}

// delta reads the leases renewed since the previous read.
func (f *Feed) delta(ctx context.Context) {
	f.mu.Lock()
	skip := !f.synced || f.awaitSync // a due resync reads every lease anyway
	f.mu.Unlock()
	if skip {
		return
	}
	rctx, touch, stop := idleContext(ctx, f.cfg.ReadTimeout)
	defer stop()
	snap, pages, err := f.readSlice(data.WithReadProgress(rctx, touch))
	if err != nil {
		if ctx.Err() == nil {
			f.setReadErr(stalled(rctx, err))
		}
		return
	}
	at := time.Now()
	f.sweep.read(pages, snap.Clock.At(at).Add(-f.cfg.DeltaOverlap), at)
	f.mu.Lock()
	f.readErr = nil
	f.renewalsAge = f.sweep.age()
	f.push(Item{Delta: &snap, At: at})
	f.mu.Unlock()
	signal(f.ready)
}

// readSlice reads the leases renewed in the sweep's next slice of the
// table, reading the table's size first at the start of a pass.
func (f *Feed) readSlice(ctx context.Context) (data.Snapshot, data.Pages, error) {
	if f.sweep.startsPass() {
		n, err := f.store.LeasePages(ctx)
		if err != nil {
			return data.Snapshot{}, data.Pages{}, err
		}
		f.sweep.pages = n
	}
	pages, since := f.sweep.slice()
	snap, err := f.store.ChangedIn(ctx, since, pages)
	return snap, pages, err
}

// signal sends on a 1-buffered channel without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Start runs the feed in a goroutine until stop is called; stop cancels it
// and waits for it to return.
func (f *Feed) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}
