package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// roundFunc is one timed round of a workload that measures events rather
// than a closed loop of operations (a handoff, a takeover): it returns the
// round's figure.
type roundFunc func(ctx context.Context) (time.Duration, error)

// partsFunc is a round whose figure comes in parts: it returns the
// round's figure first, then its parts (a fixed number of them), each
// recorded in a histogram of its own.
type partsFunc func(ctx context.Context) ([]time.Duration, error)

// measureRounds runs each of rounds over and over, side by side, through
// the warm-up and the measured window. Rounds that start after the warm-up
// are recorded, and each runs until it has recorded at least one (a slow
// round may need longer than a short window). It returns their merged
// figures and the window's length; the first failing round stops them all.
func (r *run) measureRounds(ctx context.Context, rounds []roundFunc) (*Histogram, time.Duration, error) {
	parts := make([]partsFunc, len(rounds))
	for i, round := range rounds {
		parts[i] = func(ctx context.Context) ([]time.Duration, error) {
			d, err := round(ctx)
			return []time.Duration{d}, err
		}
	}
	hs, window, err := r.measureParts(ctx, parts, 1)
	if err != nil {
		return nil, 0, err
	}
	return hs[0], window, nil
}

// measureParts is measureRounds for rounds that return n figures each (the
// round's, then its parts): it returns n merged histograms, in that order.
func (r *run) measureParts(ctx context.Context, rounds []partsFunc, n int) ([]*Histogram, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var phase atomic.Int32
	hists := make([][]Histogram, len(rounds))
	var wg sync.WaitGroup
	for i, round := range rounds {
		hists[i] = make([]Histogram, n)
		wg.Go(func() {
			if err := recordRounds(ctx, &phase, hists[i], round); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	window := r.measure(ctx, &phase)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	out := make([]*Histogram, n)
	for j := range out {
		out[j] = &Histogram{}
		for i := range hists {
			out[j].Merge(&hists[i][j])
		}
	}
	return out, window, nil
}

// recordRounds runs round until the phase is done and at least one round
// was recorded in hs (one histogram per figure the round returns).
func recordRounds(ctx context.Context, phase *atomic.Int32, hs []Histogram, round partsFunc) error {
	for ctx.Err() == nil {
		ph := phase.Load()
		if ph == phaseDone && hs[0].Count() > 0 {
			return nil
		}
		ds, err := round(ctx)
		if err != nil {
			return err
		}
		if len(ds) != len(hs) {
			return fmt.Errorf("a round returned %d figures, want %d", len(ds), len(hs))
		}
		if ph != phaseWarmup {
			for j, d := range ds {
				hs[j].Record(max(d, 0))
			}
		}
	}
	return ctx.Err()
}
