package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// propagationWorkload measures commit of an ownership change -> the event in
// the monitor's data layer (a monitor.Feed, as the monitor runs it, taken
// with Next) and, on the same transitions, in a bare data.Listener. Writers
// are paced to rate transitions per second in total (each acquire or release
// is one transition).
//
// Latency is taken from the event's own timestamp (set inside the writing
// transaction, before its commit and WAL flush) to the moment the consumer
// holds the decoded event, both on the server clock: local receive time is
// mapped through a data.Clock measured at the start (on loopback its
// uncertainty is tens of microseconds). It therefore includes the commit
// itself: an overestimate of commit -> decoded.
func propagationWorkload(rate int) func(context.Context, *run, workload) ([]Result, error) {
	return func(ctx context.Context, r *run, w workload) ([]Result, error) {
		return r.runPropagation(ctx, w, rate, 0)
	}
}

// pollPropagationWorkload is propagationWorkload with the monitor's feed in
// poll mode (reading lease.event every poll instead of listening), and no
// bare listener beside it.
func pollPropagationWorkload(rate int, poll time.Duration) func(context.Context, *run, workload) ([]Result, error) {
	return func(ctx context.Context, r *run, w workload) ([]Result, error) {
		return r.runPropagation(ctx, w, rate, poll)
	}
}

// propagationLog collects one consumer's side.
type propagationLog struct {
	account string
	clock   data.Clock

	mu       sync.Mutex
	from, to time.Time // the measured window on the server clock; zero: not yet
	hist     Histogram
	received int64          // distinct events
	seen     map[int64]bool // their ids
	repeated int64          // events received again
}

func (pl *propagationLog) event(ev data.Event, at time.Time) {
	if ev.Key.Account != pl.account || (ev.Kind != data.KindAcquired && ev.Kind != data.KindReleased) {
		return
	}
	lat := pl.clock.At(at).Sub(ev.At)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.seen == nil {
		pl.seen = map[int64]bool{}
	}
	if pl.seen[ev.ID] {
		pl.repeated++
		return
	}
	pl.seen[ev.ID] = true
	pl.received++
	if !pl.from.IsZero() && !ev.At.Before(pl.from) && (pl.to.IsZero() || ev.At.Before(pl.to)) {
		pl.hist.Record(lat)
	}
}

func (pl *propagationLog) mark(from, to time.Time) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if !from.IsZero() {
		pl.from = pl.clock.At(from)
	}
	if !to.IsZero() {
		pl.to = pl.clock.At(to)
	}
}

func (pl *propagationLog) count() int64 {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.received
}

func (r *run) runPropagation(ctx context.Context, w workload, rate int, poll time.Duration) ([]Result, error) {
	clock, err := r.serverClock(ctx)
	if err != nil {
		return nil, err
	}
	viaFeed := &propagationLog{account: r.account(w.name), clock: clock}
	viaListener := &propagationLog{account: r.account(w.name), clock: clock}
	mf, err := r.startMonitorFeed(ctx, monitor.FeedConfig{Listener: data.ListenerConfig{Poll: poll}}, viaFeed.event)
	if err != nil {
		return nil, err
	}
	defer mf.Stop()
	var lf *feed
	if poll == 0 {
		if lf, err = r.startFeed(ctx, viaListener.event, nil); err != nil {
			return nil, err
		}
		defer lf.Stop()
	}
	wr, err := r.openWriters(ctx, w.name, rate)
	if err != nil {
		return nil, err
	}
	defer wr.Close()
	r.checkpoint(ctx)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var phase atomic.Int32
	var sent atomic.Int64
	var writes Histogram
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := wr.run(ctx, &phase, &sent, &writes); err != nil && ctx.Err() == nil {
			cancel(err)
		}
	})
	window := r.measureWindow(ctx, &phase, func(from, to time.Time) {
		viaFeed.mark(from, to)
		viaListener.mark(from, to)
	})
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("ownership change -> in the monitor's data layer (monitor.Feed), %d transitions/s", rate)
	if poll > 0 {
		desc = fmt.Sprintf("ownership change -> in the monitor's data layer (monitor.Feed) polling lease.event every %s, %d transitions/s", poll, rate)
	}
	out := []Result{propagationResult(ctx, viaFeed, w.name, sent.Load(), window, desc)}
	if lf != nil {
		out = append(out, propagationResult(ctx, viaListener, w.name+"-listener", sent.Load(), window,
			fmt.Sprintf("the same transitions -> decoded by a bare data.Listener, %d transitions/s", rate)))
		if d := lf.lst.Dropped(); d > 0 {
			out[1].Note += fmt.Sprintf(", %d dropped by the listener", d)
		}
	}
	out = append(out, newResult(w.name+"-write", "the writers' own acquire/release calls: the commit, queued behind other notifying commits", &writes, window))
	out[0].Note = fmt.Sprintf("achieved %.0f/s by %d writers", out[0].OpsPerSec, len(wr.conns)) + out[0].Note
	return out, nil
}

// propagationResult waits for the consumer to have seen every transition
// sent (10 s at most) and returns its Result.
func propagationResult(ctx context.Context, pl *propagationLog, name string, sent int64, window time.Duration, desc string) Result {
	missing := waitReceived(ctx, pl, sent, 10*time.Second)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	res := newResult(name, desc, &pl.hist, window)
	res.Missed, res.Repeated = missing, pl.repeated
	if missing > 0 {
		res.Note = fmt.Sprintf(", %d events not received", missing)
	}
	if pl.repeated > 0 {
		res.Note += fmt.Sprintf(", %d received twice", pl.repeated)
	}
	return res
}

// waitReceived waits until the listener has seen want events, or timeout;
// it returns how many it is still missing.
func waitReceived(ctx context.Context, pl *propagationLog, want int64, timeout time.Duration) int64 {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for pl.count() < want && time.Now().Before(deadline) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return want - pl.count()
		}
	}
	return max(0, want-pl.count())
}

// serverClock measures the server clock: the best of five readings (the one
// with the shortest round trip).
func (r *run) serverClock(ctx context.Context) (data.Clock, error) {
	var best data.Clock
	for i := range 5 {
		var server time.Time
		t0 := time.Now()
		if err := r.admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
			return best, fmt.Errorf("read server clock: %w", err)
		}
		c := data.NewClock(server, t0, time.Now())
		if i == 0 || c.Uncertainty < best.Uncertainty {
			best = c
		}
	}
	return best, nil
}
