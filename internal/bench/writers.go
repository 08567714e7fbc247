package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// writers make ownership transitions at a fixed rate, as a fleet of holders
// does: each writer has its own connection and its own share of the keys,
// and alternately acquires and releases them. The propagation workloads and
// the monitor's active window use them.
type writers struct {
	r     *run
	conns []*pgx.Conn
	keys  []data.Key
	rate  int // transitions per second, all writers together
}

// openWriters connects the writers for rate transitions a second, one per
// 50 a second (at most Clients), on keys of the workload tagged tag.
func (r *run) openWriters(ctx context.Context, tag string, rate int) (*writers, error) {
	n := min(r.cfg.Clients, max(1, rate/50))
	conns, err := r.openConns(ctx, n)
	if err != nil {
		return nil, err
	}
	return &writers{r: r, conns: conns, keys: r.keys(tag, max(r.cfg.Keys, n)), rate: rate}, nil
}

// Close closes the writers' connections.
func (w *writers) Close() { closeConns(w.conns) }

// run runs the writers until the phase is done, staggered over one period,
// counting every transition in sent. When hist is not nil it records the
// calls that start in the measured window. The first writer to fail stops
// the others; run returns its error.
func (w *writers) run(ctx context.Context, phase *atomic.Int32, sent *atomic.Int64, hist *Histogram) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	n := len(w.conns)
	period := time.Duration(float64(time.Second) * float64(n) / float64(w.rate))
	start := time.Now()
	hists := make([]*Histogram, n)
	var wg sync.WaitGroup
	for i, conn := range w.conns {
		lo, hi := i*len(w.keys)/n, (i+1)*len(w.keys)/n
		if hist != nil {
			hists[i] = &Histogram{}
		}
		wg.Go(func() {
			err := w.r.writeTransitions(wctx, conn, w.keys[lo:hi], start.Add(period*time.Duration(i)/time.Duration(n)), period, phase, sent, hists[i])
			if err != nil && wctx.Err() == nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if hist != nil {
		for _, h := range hists {
			hist.Merge(h)
		}
	}
	return context.Cause(wctx)
}

// writeTransitions alternately acquires and releases keys on a fixed
// schedule: op k at start + k*period. A late op goes at once (no op is
// skipped), so the schedule catches up. When hist is not nil it records the
// calls that start in the measured window.
func (r *run) writeTransitions(ctx context.Context, conn *pgx.Conn, keys []data.Key, start time.Time, period time.Duration,
	phase *atomic.Int32, sent *atomic.Int64, hist *Histogram) error {
	runs := make(map[data.Key]uuid.UUID, len(keys))
	for k := 0; phase.Load() != phaseDone; k++ {
		if !sleepCtx(ctx, time.Until(start.Add(time.Duration(k)*period))) {
			return ctx.Err()
		}
		recording := hist != nil && phase.Load() == phaseMeasure
		t0 := time.Now()
		key := keys[k%len(keys)]
		if run, held := runs[key]; held {
			if err := r.libRelease(ctx, conn, key, run); err != nil {
				return err
			}
			delete(runs, key)
		} else {
			run, err := mustAcquire(ctx, conn, r.libAcquire, key, holdTTL)
			if err != nil {
				return err
			}
			runs[key] = run
		}
		if recording {
			hist.Record(time.Since(t0))
		}
		sent.Add(1)
	}
	return nil
}
