package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// preemptTTL is the preempted holder's lease: it notices a preempt at its
// next renewal, every TTL/3, unless its Client hears the notification for
// its key first.
const preemptTTL = time.Second

const preemptDesc = "lease.Client.Preempt of a live holder (another Client, its own connections) -> the holder's " +
	"Lease.Context cancelled with ErrPreempted; time from Preempt's return to the cancellation"

// runPreempt measures how soon a preempted holder stops. Clients/4 pairs (at
// least 1) run side by side, each on its own key. Each round: the holder
// acquires the key; after a random part of its renew interval (so the
// preempt lands anywhere in its renewal cycle) the preemptor preempts it;
// the figure is the time from Preempt's return (its commit) until the
// holder's Context is done. Both then release. The login must be a member
// of lease_preempt.
func (r *run) runPreempt(ctx context.Context, w workload) ([]Result, error) {
	n := max(1, r.cfg.Clients/4)
	keys := r.keys(w.name, n)
	var clients [2]*lease.Client
	for i := range clients {
		store, err := data.Open(ctx, r.cfg.DSN) // independent pools: the holders' and the preemptors'
		if err != nil {
			return nil, err
		}
		defer store.Close()
		c, err := lease.New(store, lease.Config{TTL: preemptTTL})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		clients[i] = c
	}
	holders, preemptors := clients[0], clients[1]
	r.checkpoint(ctx)

	rounds := make([]roundFunc, n)
	for i, key := range keys {
		rng := rand.New(rand.NewPCG(uint64(i), 11))
		rounds[i] = func(ctx context.Context) (time.Duration, error) {
			return preemptRound(ctx, holders, preemptors, key, time.Duration(rng.Int64N(int64(holders.Config().RenewInterval))))
		}
	}
	h, window, err := r.measureRounds(ctx, rounds)
	if err != nil {
		return nil, err
	}
	res := newResult(w.name, preemptDesc, h, window)
	res.Note = fmt.Sprintf("%d pair(s), holder TTL %s (renewal every %s)", n, preemptTTL, holders.Config().RenewInterval.Round(time.Millisecond))
	return []Result{res}, nil
}

// allowBench is bench's Authorizer: bench competes only for its own keys.
var allowBench = lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })

// preemptRound is one preempt; it returns how long the holder took to stop.
func preemptRound(ctx context.Context, holders, preemptors *lease.Client, key data.Key, after time.Duration) (time.Duration, error) {
	ph, err := holders.Authorize(ctx, allowBench, key, "bench holder")
	if err != nil {
		return 0, err
	}
	held, err := holders.Try(ctx, ph)
	if err != nil {
		return 0, fmt.Errorf("preempt %s: holder: %w", key, err)
	}
	defer held.Release(context.WithoutCancel(ctx)) //nolint:errcheck // lost by then: a no-op
	pp, err := preemptors.Authorize(ctx, allowBench, key, "bench preemptor")
	if err != nil {
		return 0, err
	}
	if !sleepCtx(ctx, after) {
		return 0, ctx.Err()
	}
	p, err := preemptors.Preempt(ctx, pp, "bench")
	if err != nil {
		return 0, fmt.Errorf("preempt %s: %w", key, err)
	}
	committed := time.Now()
	defer p.Release(context.WithoutCancel(ctx)) //nolint:errcheck // best effort: it expires by itself
	select {
	case <-held.Done():
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	took := time.Since(committed)
	if cause := held.Err(); !errors.Is(cause, lease.ErrPreempted) {
		return 0, fmt.Errorf("preempt %s: the holder ended with %v, want ErrPreempted", key, cause)
	}
	return took, nil
}
