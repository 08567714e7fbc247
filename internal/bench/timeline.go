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

// The timeline at scale (issue 28): Config.MonitorLeases live leases
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
	r.progress(fmt.Sprintf("timeline: writing %d events of history (%d/s over %v)", rate*int(timelineHistoryWindow/time.Second), rate, timelineHistoryWindow))
	histEnd, err := r.preloadHistory(ctx, "timeline", n, rate)
	if err != nil {
		return nil, err
	}
	r.progress(fmt.Sprintf("timeline: writing %d leases through lease.acquire", n))
	if err := r.preloadLeases(ctx, "timeline", n); err != nil {
		return nil, err
	}
	r.checkpoint(ctx)
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

	// The writer, at 1000 transitions/s, from here to the idle window.
	wr, err := r.openWriters(ctx, "timeline-writer", 1000)
	if err != nil {
		return nil, err
	}
	wctx, stopWriter := context.WithCancelCause(ctx)
	var wphase atomic.Int32
	var sent atomic.Int64
	var wg sync.WaitGroup
	defer func() { // the writer stops before its connections close
		stopWriter(nil)
		wg.Wait()
		wr.Close()
	}()
	writerStart := time.Now()
	wg.Go(func() {
		if err := wr.run(wctx, &wphase, &sent, nil); err != nil && wctx.Err() == nil {
			stopWriter(fmt.Errorf("writer: %w", err))
		}
	})
	stop := func() (float64, error) {
		wphase.Store(phaseDone)
		wg.Wait()
		achieved := float64(sent.Load()) / time.Since(writerStart).Seconds()
		if err := context.Cause(wctx); err != nil && ctx.Err() == nil {
			return achieved, err
		}
		return achieved, nil
	}

	r.progress("timeline: the main table's frames (baseline)")
	mon.frames.swap()
	if !sleepCtx(ctx, r.cfg.Warmup+r.cfg.Duration) {
		return nil, ctx.Err()
	}
	mainFrames := mon.frames.swap()

	r.progress(fmt.Sprintf("timeline: opening it %d times", timelineOpens))
	open, dbOpen := &Histogram{}, &Histogram{}
	openParts, scrubParts := newStepParts(), newStepParts()
	var lanes, events int
	for i := range timelineOpens {
		db0 := reads.spent()
		res, err := mon.press(ctx, keyTimeline, func(st ui.TimelineStatus) bool { return st.Open && st.Read }, stepTimeout)
		if err != nil {
			return nil, fmt.Errorf("open %d: %w", i+1, err)
		}
		st := res.st
		open.Record(res.d)
		openParts.record(res)
		dbOpen.Record(reads.spent() - db0)
		lanes, events = st.Lanes, st.Events
		if _, err := mon.press(ctx, keyTimeline, func(st ui.TimelineStatus) bool { return !st.Open }, stepTimeout); err != nil {
			return nil, fmt.Errorf("close %d: %w", i+1, err)
		}
		if err := mon.typeKeys(keyPageDown); err != nil { // the next lanes: not read yet
			return nil, err
		}
	}

	r.progress("timeline: scrubbing")
	if _, err := mon.press(ctx, keyTimeline, func(st ui.TimelineStatus) bool { return st.Open && st.Read }, stepTimeout); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	mon.frames.swap()
	scrub, next, dbScrub := &Histogram{}, &Histogram{}, &Histogram{}
	var cursor time.Time
	deadline := time.Now().Add(r.cfg.Warmup + r.cfg.Duration)
	for i := 0; time.Now().Before(deadline) || scrub.Count() < 3 || next.Count() < 3; i++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if i == 1000 {
			return nil, fmt.Errorf("%d scrub steps, %d of them n: the lanes never had an event ahead", i, next.Count())
		}
		// n only where the lanes have events ahead: a minute inside the
		// history (the leases were acquired after it, the writer's keys are
		// not lanes); before that, another [.
		key, h := keyLeft, scrub
		switch {
		case i%3 == 2 && !cursor.IsZero() && histEnd.Sub(cursor) > time.Minute:
			key, h = keyNext, next
		case i%3 != 0:
			key = keyBack10
		}
		prev := cursor
		db0 := reads.spent()
		res, err := mon.press(ctx, key, func(st ui.TimelineStatus) bool {
			return st.Scrubbed && !st.Cursor.Equal(prev) && st.HeldRead
		}, stepTimeout)
		if err != nil {
			return nil, fmt.Errorf("scrub step %d (%q): %w", i+1, key, err)
		}
		st := res.st
		h.Record(res.d)
		scrubParts.record(res)
		dbScrub.Record(reads.spent() - db0)
		cursor = st.Cursor
		if histEnd.Sub(cursor) > timelineHistoryWindow-2*time.Minute { // near the history's start: back to live
			if _, err := mon.press(ctx, keyEsc, func(st ui.TimelineStatus) bool { return !st.Scrubbed }, stepTimeout); err != nil {
				return nil, fmt.Errorf("back to live: %w", err)
			}
			cursor = time.Time{}
		}
	}
	if _, err := mon.press(ctx, keyEsc, func(st ui.TimelineStatus) bool { return !st.Scrubbed }, stepTimeout); err != nil {
		return nil, fmt.Errorf("back to live: %w", err)
	}
	tlFrames := mon.frames.swap()
	achieved, err := stop()
	if err != nil {
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
	tlFrames.Merge(idleFrames)

	load := fmt.Sprintf("%d leases, %d events of history over %v, %.0f transitions/s", n, rate*int(timelineHistoryWindow/time.Second), timelineHistoryWindow, achieved)
	mainRes := newResult("timeline-main-frame", "the baseline: time to render one 200x50 frame of the main table, "+load, mainFrames, 0)
	openRes := newResult("timeline-open", "t -> the first frame with the lanes drawn from their history, "+load, open, 0)
	openRes.Note = fmt.Sprintf("%d lanes, %d events read for them (the last open); %s", lanes, events, openParts)
	scrubRes := newResult("timeline-scrub", "← or [ (back 1 or 10 columns) -> the first frame with the cursor there and who held each lane then, "+load, scrub, 0)
	scrubRes.Note = scrubParts.String() + " (← [ and n)"
	nextRes := newResult("timeline-next", "n (the next event) -> the first frame with the cursor on it and who held each lane then, "+load, next, 0)
	frameRes := newResult("timeline-frame", "time to render one 200x50 frame of the timeline (View), scrubbing and idle", tlFrames, 0)
	dbOpen.Merge(dbScrub)
	dbRes := newResult("timeline-db", "the database reads' time (Replay, OwnersAt) within each open and scrub step", dbOpen, 0)
	dbRes.Note = fmt.Sprintf("%d round trips in all (a pipeline of statements is one)", reads.n.Load())
	idle.Name, idle.Description = "timeline-idle", fmt.Sprintf("%d leases, the timeline open and live, nothing changes: CPU of the monitor's process, resident memory", n)
	return []Result{mainRes, openRes, scrubRes, nextRes, frameRes, dbRes, idle}, nil
}
