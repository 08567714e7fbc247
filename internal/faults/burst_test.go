package faults_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// burstWorkers is how many independent connections make a burst.
const burstWorkers = 4

// burst makes n ownership transitions (n/2 acquire and release pairs, each
// statement its own transaction) from burstWorkers connections of their
// own, on sessions of their own.
func (r *rig) burst(ctx context.Context, n int) error {
	var wg sync.WaitGroup
	errs := make([]error, burstWorkers)
	pairs := n / 2
	for w := range burstWorkers {
		share := pairs / burstWorkers
		if w < pairs%burstWorkers {
			share++
		}
		wg.Go(func() { errs[w] = r.burstWorker(ctx, w, share) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *rig) burstWorker(ctx context.Context, w, pairs int) error {
	conn, err := pgx.Connect(ctx, r.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for i := range pairs {
		session, run := fmt.Sprintf("burst-%d-%d", w, i%8), uuid.New()
		if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, $2, $3, '1 min', 'burst')`, account, session, run); err != nil {
			return fmt.Errorf("burst acquire: %w", err)
		}
		if _, err := conn.Exec(ctx, `SELECT lease.release($1, $2, $3)`, account, session, run); err != nil {
			return fmt.Errorf("burst release: %w", err)
		}
	}
	return nil
}

// during runs fn in the background and calls sample every 5 ms until fn
// returns; it returns fn's error and how long fn took.
func during(fn func() error, sample func()) (time.Duration, error) {
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- fn() }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return time.Since(t0), err
		case <-tick.C:
			sample()
		}
	}
}

// heapInUse returns the live heap after a collection, in MiB.
func heapInUse() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// Fault 5: a burst of 10,000 ownership transitions in a few seconds. The
// monitor model keeps applying while it runs (a read of its state is never
// stuck behind the burst, and its picture advances during it), holds a
// bounded amount (its event log is capped, a batch never exceeds the feed's
// pending cap), and misses nothing.
func TestBurstOfTransitions(t *testing.T) {
	r := newRig(t, 0)
	p := r.startProbe(pgtest.OpenStore(t, r.url, data.Options{}), mirrorCfg())
	n := scale(10_000, 50_000)
	heapBefore := heapInUse()
	var before int64
	p.Read(func(s *monitor.State) { before = s.Applied() })

	var maxRead time.Duration
	progress := map[int64]bool{}
	took, err := during(func() error { return r.burst(context.Background(), n) }, func() {
		t0 := time.Now()
		p.Read(func(s *monitor.State) { progress[s.Applied()] = true })
		maxRead = max(maxRead, time.Since(t0))
	})
	if err != nil {
		t.Fatal(err)
	}
	caughtUp := r.converge(p.Mirror, time.Now())
	heapAfter := heapInUse()
	tally := r.audit(p.Mirror)

	var final int64
	var logLen int
	p.Read(func(s *monitor.State) { final, logLen = s.Applied(), len(s.Events()) })
	if final-before < int64(n) {
		t.Errorf("the monitor applied %d events during the burst, want at least the %d transitions", final-before, n)
	}
	between := 0
	for v := range progress {
		if v > before && v < final {
			between++
		}
	}
	if between < 3 {
		t.Errorf("the monitor's picture advanced only %d times while the burst ran: it did not keep up", between)
	}
	if logLen > 500 {
		t.Errorf("the monitor keeps %d events, want at most its limit of 500", logLen)
	}
	c := p.carried()
	if limit := 20000 + 1024; c.bigBatch > limit {
		t.Errorf("a batch held %d items, more than the feed's pending cap allows (%d)", c.bigBatch, limit)
	}
	report(t, "burst", "transitions", n, "took", took, "per_second", int(float64(n)/took.Seconds()),
		"caught_up_after_burst", caughtUp, "max_read_wait", maxRead, "progress_steps", between,
		"notifications", c.notified, "resyncs", c.syncs, "listener_dropped", c.dropped, "biggest_batch", c.bigBatch,
		"heap_before_MiB", fmt.Sprintf("%.1f", heapBefore), "heap_after_MiB", fmt.Sprintf("%.1f", heapAfter),
		"runs", tally.RunsStarted)
}

// queueUsage returns pg_notification_queue_usage(): the fraction of the
// cluster's 8 GB notification queue in use.
func (r *rig) queueUsage() float64 {
	r.t.Helper()
	var u float64
	if err := r.store.Pool().QueryRow(context.Background(), `SELECT pg_notification_queue_usage()`).Scan(&u); err != nil {
		r.t.Fatalf("pg_notification_queue_usage: %v", err)
	}
	return u
}

// Fault 6: a monitor whose consumer takes nothing for the whole of a burst
// (harsher than the terminal's pause, which only freezes the screen) does
// not make PostgreSQL's notification queue grow: its listener keeps
// reading, and its feed coalesces what the consumer has not taken into one
// resync from lease.event. A listener that stops reading (a session idle in
// a transaction) is the control: the same burst then stays in the queue.
func TestPausedMonitorKeepsReading(t *testing.T) {
	r := newRig(t, 0)
	n := scale(10_000, 50_000)
	cfg := mirrorCfg()
	cfg.MaxPending = 1000   // what a consumer that takes nothing may leave pending
	cfg.ResyncLimit = 4 * n // one resync returns everything a paused consumer missed
	p := r.startProbe(pgtest.OpenStore(t, r.url, data.Options{}), cfg)

	p.Pause()
	var pausedMax float64
	took, err := during(func() error { return r.burst(context.Background(), n) }, func() {
		pausedMax = max(pausedMax, r.queueUsage())
	})
	if err != nil {
		t.Fatal(err)
	}
	pausedAfter := r.queueUsage()
	p.Resume()
	caughtUp := r.converge(p.Mirror, time.Now())
	c := p.carried()
	if !c.firstSync {
		t.Error("the first batch after the pause did not start with a resync: the feed queued every notification")
	}
	if limit := cfg.MaxPending + 1024 + 1; c.bigBatch > limit {
		t.Errorf("a batch held %d items; a paused consumer may leave at most %d pending", c.bigBatch, limit)
	}

	// The control: a listener that does not read holds the queue.
	control, err := pgx.Connect(context.Background(), r.url)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close(context.Background())
	if _, err := control.Exec(context.Background(), `LISTEN lease_events`); err != nil {
		t.Fatal(err)
	}
	tx, err := control.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.burst(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	stuck := r.queueUsage()
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if stuck <= 0 || pausedMax >= stuck/4 || pausedAfter >= stuck/4 {
		t.Errorf("queue usage: %.7f at most while the monitor was paused (%.7f after), %.7f with a listener that does not read; want the paused monitor's far below",
			pausedMax, pausedAfter, stuck)
	}
	r.converge(p.Mirror, time.Now())
	r.audit(p.Mirror)
	report(t, "paused-monitor", "transitions", n, "took", took, "queue_usage_max_paused", fmt.Sprintf("%.7f", pausedMax),
		"queue_usage_after_paused_burst", fmt.Sprintf("%.7f", pausedAfter), "queue_usage_stuck_listener", fmt.Sprintf("%.7f", stuck),
		"caught_up_after_unpause", caughtUp, "biggest_batch", c.bigBatch)
}
