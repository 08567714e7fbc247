package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// roundFunc is one timed round of a workload that measures events rather
// than a closed loop of operations (a handoff, a takeover): it returns the
// round's figure.
type roundFunc func(ctx context.Context) (time.Duration, error)

// measureRounds runs each of rounds over and over, side by side, through
// the warm-up and the measured window. Rounds that start after the warm-up
// are recorded, and each runs until it has recorded at least one (a slow
// round may need longer than a short window). It returns their merged
// figures and the window's length; the first failing round stops them all.
func (r *run) measureRounds(ctx context.Context, rounds []roundFunc) (*Histogram, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var phase atomic.Int32
	hists := make([]Histogram, len(rounds))
	var wg sync.WaitGroup
	for i, round := range rounds {
		wg.Go(func() {
			if err := recordRounds(ctx, &phase, &hists[i], round); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	window := r.measure(ctx, &phase)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	var h Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	return &h, window, nil
}

// recordRounds runs round until the phase is done and at least one round
// was recorded in h.
func recordRounds(ctx context.Context, phase *atomic.Int32, h *Histogram, round roundFunc) error {
	for ctx.Err() == nil {
		ph := phase.Load()
		if ph == phaseDone && h.Count() > 0 {
			return nil
		}
		d, err := round(ctx)
		if err != nil {
			return err
		}
		if ph != phaseWarmup {
			h.Record(d)
		}
	}
	return ctx.Err()
}
