package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// takeoverTTL is the dying holder's lease: short, so rounds are quick, and
// long enough for a couple of renewals before it dies.
const takeoverTTL = time.Second

const takeoverDesc = "holder dies without releasing (as after kill -9: no renewal, no release) -> a waiting " +
	"lease.Client.Wait takes over; time from the holder's expiry to the takeover (at - prev_expires_at, database clock)"

// runTakeover measures how soon after a dead holder's lease expires a waiter
// takes it over. Clients/4 pairs (at least 1) run side by side. Each round:
// the holder acquires the pair's key with takeoverTTL; a waiter
// (lease.Client.Wait, NOTIFY-woken, on the shared Client) is refused and
// waits; the holder renews 0-2 times every TTL/3, as a live holder does,
// then stops for good; the waiter takes over after the expiry. The figure is
// the taken_over event's at - prev_expires_at, both on the database clock,
// so neither machine's clock nor the waiter's reply time enters it.
func (r *run) runTakeover(ctx context.Context, w workload) ([]Result, error) {
	n := max(1, r.cfg.Clients/4)
	keys := r.keys(w.name, n)
	store, err := data.Open(ctx, r.cfg.DSN) // the holders' and the events' connections
	if err != nil {
		return nil, err
	}
	defer store.Close()
	lw, err := r.startLeaseWaiters(ctx, keys)
	if err != nil {
		return nil, err
	}
	defer lw.Close()
	r.checkpoint(ctx)

	rounds := make([]roundFunc, n)
	for i, key := range keys {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		rounds[i] = func(ctx context.Context) (time.Duration, error) {
			return takeoverRound(ctx, store, lw, key, rng.IntN(3))
		}
	}
	h, window, err := r.measureRounds(ctx, rounds)
	if err != nil {
		return nil, err
	}
	res := newResult(w.name, takeoverDesc, h, window)
	res.Note = fmt.Sprintf("%d pair(s), holder TTL %s", n, takeoverTTL)
	return []Result{res}, nil
}

// takeoverRound is one death and takeover; it returns the takeover's delay
// after the expiry.
func takeoverRound(ctx context.Context, store *data.Store, lw *leaseWaiters, key data.Key, renewals int) (time.Duration, error) {
	run := uuid.New()
	g, err := store.Acquire(ctx, key, run, takeoverTTL, "bench dying holder")
	if err != nil {
		return 0, fmt.Errorf("takeover %s: holder: %w", key, err)
	}
	w, err := lw.start(ctx, key)
	if err != nil {
		return 0, err
	}
	defer w.release(context.WithoutCancel(ctx)) //nolint:errcheck // a second call after the one below is a no-op
	for range renewals {
		if !sleepCtx(ctx, takeoverTTL/3) {
			return 0, ctx.Err()
		}
		if _, err := store.Renew(ctx, key, run, takeoverTTL); err != nil {
			return 0, fmt.Errorf("takeover %s: holder renewal: %w", key, err)
		}
	}
	// The holder is dead from here on: it neither renews nor releases.
	if _, err := w.owned(ctx); err != nil {
		return 0, err
	}
	evs, err := store.EventsFor(ctx, key, 1)
	if err != nil {
		return 0, err
	}
	if len(evs) != 1 || evs[0].Kind != data.KindTakenOver || evs[0].PrevFence != g.Fence {
		return 0, fmt.Errorf("takeover %s: last event %+v, want the waiter's takeover from the dead holder", key, evs)
	}
	return evs[0].At.Sub(evs[0].PrevExpiresAt), w.release(ctx)
}
