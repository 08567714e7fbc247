package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leasetop/leasetop/lease"
)

// forceStopTTL is the holder's TTL in the forcestop workloads: its first
// renewal is TTL/3 away, so only the holder watch (lease/watch.go) can stop
// it within a round.
const forceStopTTL = time.Minute

func forceStopWorkload(poll time.Duration) func(context.Context, *run, workload) ([]Result, error) {
	return func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runForceStop(ctx, w, poll) }
}

// runForceStop measures how soon a holder learns that an operator
// force-released its lease: from just before data.Store.ForceRelease to the
// moment the holder's Lease.Context is cancelled with ErrForceReleased. The
// holder is a lease.Client whose listener listens (poll 0) or polls every
// poll; a second lease of the same Client, held for the whole run, keeps its
// listener up, as in a process that holds several sessions.
func (r *run) runForceStop(ctx context.Context, w workload, poll time.Duration) ([]Result, error) {
	store, err := r.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	cfg := lease.Config{TTL: forceStopTTL}
	cfg.Listener.Poll = poll
	client, err := lease.New(store, cfg)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	keys := r.keys(w.name, 1)
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	idle, err := client.Authorize(ctx, allow, idleKey(keys), "bench idle holder")
	if err != nil {
		return nil, err
	}
	held, err := client.Try(ctx, idle)
	if err != nil {
		return nil, err
	}
	defer held.Release(context.WithoutCancel(ctx)) //nolint:errcheck // best effort: it expires anyway
	permit, err := client.Authorize(ctx, allow, keys[0], "bench holder")
	if err != nil {
		return nil, err
	}
	round := func(ctx context.Context) (time.Duration, error) {
		l, err := client.Try(ctx, permit)
		if err != nil {
			return 0, err
		}
		defer l.Release(context.WithoutCancel(ctx)) //nolint:errcheck // lost by then: nothing to delete
		// A round starts right after the previous one's poll found its
		// release: a random pause of up to one interval spreads the forced
		// releases uniformly between polls.
		if poll > 0 && !sleepCtx(ctx, rand.N(poll+1)) {
			return 0, ctx.Err()
		}
		t0 := time.Now()
		if ok, err := store.ForceRelease(ctx, keys[0], l.RunID(), "leasetop bench"); err != nil || !ok {
			return 0, fmt.Errorf("force release: released %v, %w", ok, err)
		}
		late := time.NewTimer(forceStopTTL / 3)
		defer late.Stop()
		select {
		case <-l.Done():
		case <-late.C:
			return 0, errors.New("the holder did not notice the forced release before its first renewal")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		stopped := time.Since(t0)
		if !errors.Is(l.Err(), lease.ErrForceReleased) {
			return 0, fmt.Errorf("holder stopped with %v, want ErrForceReleased", l.Err())
		}
		return stopped, nil
	}
	r.checkpoint(ctx)
	h, window, err := r.measureRounds(ctx, []roundFunc{round})
	if err != nil {
		return nil, err
	}
	desc := "operator force-releases a held lease -> the holder's Lease.Context is cancelled (ErrForceReleased); the holder listens"
	if poll > 0 {
		desc = fmt.Sprintf("the same with the holder's listener polling lease.event every %s", poll)
	}
	return []Result{newResult(w.name, desc, h, window)}, nil
}
