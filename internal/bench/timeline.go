package bench

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasetop/leasetop/ui"
)

// Keys as a terminal sends them.
const (
	keyTimeline = "t"
	keyLeft     = "\x1b[D" // ←: back one column
	keyBack10   = "["      // back ten columns
	keyNext     = "n"      // the next event of the lanes
	keyEsc      = "\x1b"
	keyPageDown = "\x1b[6~"
)

// timelineOpens is how many times the workload opens the timeline, each on
// the next page of the table's rows (lanes whose history was not read).
const timelineOpens = 10

// stepTimeout bounds one key's wait for its frame: far beyond any target,
// only a hung read or view reaches it.
const stepTimeout = 30 * time.Second

// The timeline at scale: Config.MonitorLeases live leases
// (100,000 by default) written through lease.acquire, and before them
// 15 minutes of history at 1000 transitions/s for that fleet (bulk rows in
// lease.event, 900,000 events: preloadHistory); then the monitor's program
// (ui.NewProgram, drawing 200x50 into io.Discard) with keys typed into its
// input as a terminal sends them, and a writer making 1000 transitions/s
// throughout the measurements:
//
//   - timeline-main-frame: the baseline, the main table's frames in the
//     same run, the same fleet and load;
//   - timeline-open: the t key -> the first frame with the lanes drawn from
//     their history (OwnersAt at the window's start and EventsBetween of
//     the lanes on screen), timelineOpens times, each on the next page of
//     the table so each reads;
//   - timeline-scrub: ← and [ (back one and ten columns) -> the first frame
//     with the cursor there and who held each lane then read (OwnersAt);
//   - timeline-next: n (the next event) -> the same;
//   - timeline-frame: the time of every View while the timeline shows;
//   - timeline-db: the database reads' time within each open and scrub step
//     (the statements of EventsBetween and OwnersAt, timed by a tracer);
//   - timeline-idle: the timeline open, live, nothing changes: CPU and
//     resident memory, for the monitor's idle targets.
//
// "Frame" is the View that draws the state; Bubble Tea writes it to the
// terminal at its next tick (ui.FrameRate a second). Run it alone (--only
// timeline) for a clean resident-memory figure.
func timelineScale(ctx context.Context, r *run, w workload) ([]Result, error) {
	n := r.cfg.MonitorLeases
	rate := timelineRate(n)
	histEnd, err := r.preloadTimeline(ctx, n, rate)
	if err != nil {
		return nil, err
	}
	reads := &readTimer{}
	store, err := r.openStore(ctx, reads)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	debug.FreeOSMemory()
	mon, err := startTimelineMonitor(ctx, store)
	if err != nil {
		return nil, err
	}
	defer mon.Stop()
	if err := mon.waitLoaded(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	wr, err := r.startTimelineWriter(ctx) // from here to the idle window
	if err != nil {
		return nil, err
	}
	defer wr.close()

	r.progress("timeline: the main table's frames (baseline)")
	mon.frames.swap()
	if !sleepCtx(ctx, r.cfg.Warmup+r.cfg.Duration) {
		return nil, ctx.Err()
	}
	m := timelineMeasures{main: mon.frames.swap()}
	r.progress(fmt.Sprintf("timeline: opening it %d times", timelineOpens))
	if err := m.opens(ctx, mon, reads); err != nil {
		return nil, err
	}
	r.progress("timeline: scrubbing")
	if err := m.scrubs(ctx, mon, reads, histEnd, r.cfg.Warmup+r.cfg.Duration); err != nil {
		return nil, err
	}
	if m.achieved, err = wr.stop(ctx); err != nil {
		return nil, err
	}

	r.progress("timeline: open and live, idle window")
	idle, idleFrames := r.usageWindow(ctx, mon.monitorProgram, nil)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := mon.err(); err != nil {
		return nil, err
	}
	m.frames.Merge(idleFrames)
	idle.Name, idle.Description = "timeline-idle", fmt.Sprintf("%d leases, the timeline open and live, nothing changes: CPU of the monitor's process, resident memory", n)
	return append(m.results(n, rate, reads), idle), nil
}

// preloadTimeline writes the timeline's history (rate transitions a second
// for timelineHistoryWindow) and then n live leases, and returns when the
// history ends.
func (r *run) preloadTimeline(ctx context.Context, n, rate int) (time.Time, error) {
	r.progress(fmt.Sprintf("timeline: writing %d events of history (%d/s over %v)", rate*int(timelineHistoryWindow/time.Second), rate, timelineHistoryWindow))
	histEnd, err := r.preloadHistory(ctx, "timeline", n, rate)
	if err != nil {
		return time.Time{}, err
	}
	r.progress(fmt.Sprintf("timeline: writing %d leases through lease.acquire", n))
	if err := r.preloadLeases(ctx, "timeline", n); err != nil {
		return time.Time{}, err
	}
	r.checkpoint(ctx)
	return histEnd, nil
}

// timelineWriter is the workload's writer: 1000 transitions a second while
// the timeline is measured.
type timelineWriter struct {
	wr     *writers
	ctx    context.Context
	cancel context.CancelCauseFunc
	phase  atomic.Int32
	sent   atomic.Int64
	start  time.Time
	wg     sync.WaitGroup
}

// startTimelineWriter starts the writer; close stops it.
func (r *run) startTimelineWriter(ctx context.Context) (*timelineWriter, error) {
	wr, err := r.openWriters(ctx, "timeline-writer", 1000)
	if err != nil {
		return nil, err
	}
	w := &timelineWriter{wr: wr, start: time.Now()}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.wg.Go(func() {
		if err := wr.run(w.ctx, &w.phase, &w.sent, nil); err != nil && w.ctx.Err() == nil {
			w.cancel(fmt.Errorf("writer: %w", err))
		}
	})
	return w, nil
}

// stop ends the writing and returns the transitions a second it achieved,
// or the writer's error.
func (w *timelineWriter) stop(ctx context.Context) (float64, error) {
	w.phase.Store(phaseDone)
	w.wg.Wait()
	achieved := float64(w.sent.Load()) / time.Since(w.start).Seconds()
	if err := context.Cause(w.ctx); err != nil && ctx.Err() == nil {
		return achieved, err
	}
	return achieved, nil
}

// close stops the writer before its connections close.
func (w *timelineWriter) close() {
	w.cancel(nil)
	w.wg.Wait()
	w.wr.Close()
}

// timelineMeasures are what the timeline workload measures.
type timelineMeasures struct {
	main, frames          *Histogram // the main table's frames; the timeline's
	open, dbOpen          *Histogram // t -> lanes drawn; the reads within
	scrub, next, dbScrub  *Histogram // ← and [ -> who held what; n -> the same; the reads within
	openParts, scrubParts stepParts
	lanes, events         int     // of the last open
	achieved              float64 // the writer's transitions a second
}

// opens opens the timeline timelineOpens times, each on the next page of
// the table's rows (lanes whose history was not read yet), and closes it.
func (m *timelineMeasures) opens(ctx context.Context, mon *timelineProgram, reads *readTimer) error {
	m.open, m.dbOpen, m.openParts = &Histogram{}, &Histogram{}, newStepParts()
	for i := range timelineOpens {
		db0 := reads.spent()
		res, err := mon.press(ctx, keyTimeline, func(st ui.TimelineStatus) bool { return st.Open && st.Read }, stepTimeout)
		if err != nil {
			return fmt.Errorf("open %d: %w", i+1, err)
		}
		m.open.Record(res.d)
		m.openParts.record(res)
		m.dbOpen.Record(reads.spent() - db0)
		m.lanes, m.events = res.st.Lanes, res.st.Events
		if _, err := mon.press(ctx, keyTimeline, func(st ui.TimelineStatus) bool { return !st.Open }, stepTimeout); err != nil {
			return fmt.Errorf("close %d: %w", i+1, err)
		}
		if err := mon.typeKeys(keyPageDown); err != nil { // the next lanes: not read yet
			return err
		}
	}
	return nil
}

// scrubs opens the timeline and moves its cursor back (← and [) and to the
// next event (n) for d, at least three of each, then goes back to live; the
// timeline's frames meanwhile are m.frames.
func (m *timelineMeasures) scrubs(ctx context.Context, mon *timelineProgram, reads *readTimer, histEnd time.Time, d time.Duration) error {
	if _, err := mon.press(ctx, keyTimeline, func(st ui.TimelineStatus) bool { return st.Open && st.Read }, stepTimeout); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	mon.frames.swap()
	deadline := time.Now().Add(d)
	m.scrub, m.next, m.dbScrub, m.scrubParts = &Histogram{}, &Histogram{}, &Histogram{}, newStepParts()
	var cursor time.Time
	for i := 0; time.Now().Before(deadline) || m.scrub.Count() < 3 || m.next.Count() < 3; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if i == 1000 {
			return fmt.Errorf("%d scrub steps, %d of them n: the lanes never had an event ahead", i, m.next.Count())
		}
		var err error
		if cursor, err = m.scrubStep(ctx, mon, reads, i, cursor, histEnd); err != nil {
			return err
		}
	}
	if _, err := mon.press(ctx, keyEsc, func(st ui.TimelineStatus) bool { return !st.Scrubbed }, stepTimeout); err != nil {
		return fmt.Errorf("back to live: %w", err)
	}
	m.frames = mon.frames.swap()
	return nil
}

// scrubStep is scrub step i from cursor (zero: live): n only where the
// lanes have events ahead, a minute inside the history (the leases were
// acquired after it, the writer's keys are not lanes), before that another
// [. Near the history's start it goes back to live. It returns the cursor.
func (m *timelineMeasures) scrubStep(ctx context.Context, mon *timelineProgram, reads *readTimer, i int, cursor, histEnd time.Time) (time.Time, error) {
	key, h := keyLeft, m.scrub
	switch {
	case i%3 == 2 && !cursor.IsZero() && histEnd.Sub(cursor) > time.Minute:
		key, h = keyNext, m.next
	case i%3 != 0:
		key = keyBack10
	}
	prev := cursor
	db0 := reads.spent()
	res, err := mon.press(ctx, key, func(st ui.TimelineStatus) bool {
		return st.Scrubbed && !st.Cursor.Equal(prev) && st.HeldRead
	}, stepTimeout)
	if err != nil {
		return cursor, fmt.Errorf("scrub step %d (%q): %w", i+1, key, err)
	}
	h.Record(res.d)
	m.scrubParts.record(res)
	m.dbScrub.Record(reads.spent() - db0)
	cursor = res.st.Cursor
	if histEnd.Sub(cursor) > timelineHistoryWindow-2*time.Minute { // near the history's start: back to live
		if _, err := mon.press(ctx, keyEsc, func(st ui.TimelineStatus) bool { return !st.Scrubbed }, stepTimeout); err != nil {
			return cursor, fmt.Errorf("back to live: %w", err)
		}
		cursor = time.Time{}
	}
	return cursor, nil
}

// results are the workload's rows but the idle window's, for n leases and
// a history of rate transitions a second.
func (m *timelineMeasures) results(n, rate int, reads *readTimer) []Result {
	load := fmt.Sprintf("%d leases, %d events of history over %v, %.0f transitions/s", n, rate*int(timelineHistoryWindow/time.Second), timelineHistoryWindow, m.achieved)
	mainRes := newResult("timeline-main-frame", "the baseline: time to render one 200x50 frame of the main table, "+load, m.main, 0)
	openRes := newResult("timeline-open", "t -> the first frame with the lanes drawn from their history, "+load, m.open, 0)
	openRes.Note = fmt.Sprintf("%d lanes, %d events read for them (the last open); %s", m.lanes, m.events, m.openParts)
	scrubRes := newResult("timeline-scrub", "← or [ (back 1 or 10 columns) -> the first frame with the cursor there and who held each lane then, "+load, m.scrub, 0)
	scrubRes.Note = m.scrubParts.String() + " (← [ and n)"
	nextRes := newResult("timeline-next", "n (the next event) -> the first frame with the cursor on it and who held each lane then, "+load, m.next, 0)
	frameRes := newResult("timeline-frame", "time to render one 200x50 frame of the timeline (View), scrubbing and idle", m.frames, 0)
	m.dbOpen.Merge(m.dbScrub)
	dbRes := newResult("timeline-db", "the database reads' time (Replay, OwnersAt) within each open and scrub step", m.dbOpen, 0)
	dbRes.Note = fmt.Sprintf("%d round trips in all (a pipeline of statements is one)", reads.n.Load())
	return []Result{mainRes, openRes, scrubRes, nextRes, frameRes, dbRes}
}
