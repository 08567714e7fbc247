package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// handoffMode is how a waiting acquirer learns that the lease is free.
type handoffMode struct {
	desc string
	// poll is the retry interval of a polling waiter; 0 means the waiter is
	// lease.Client.Wait, woken by the release's NOTIFY.
	poll time.Duration
	// pause is the longest random pause between "the waiter is waiting" and
	// the release: for a poller one interval, so releases fall uniformly
	// between its attempts.
	pause time.Duration
	// concurrent runs Clients/4 pairs side by side instead of one: pollers
	// spend a round mostly asleep and need them for enough samples.
	concurrent bool
}

var (
	handoffNotify = handoffMode{
		desc: "holder releases -> waiter owns the lease; the waiter is lease.Client.Wait, woken by the release's NOTIFY", pause: 10 * time.Millisecond}
	handoffPoll100ms = handoffMode{
		desc: "the same with a waiter that retries acquire every 100ms", poll: 100 * time.Millisecond, pause: 100 * time.Millisecond,
		concurrent: true}
	handoffPoll1s = handoffMode{
		desc: "the same with a waiter that retries acquire every 1s (consul lock-like)", poll: time.Second, pause: time.Second,
		concurrent: true}
)

func handoffWorkload(m handoffMode) func(context.Context, *run, workload) ([]Result, error) {
	return func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runHandoff(ctx, w, m) }
}

// waiterFactory starts a waiter on key while the holder holds it and returns
// once the waiter has been refused (so it is waiting).
type waiterFactory func(ctx context.Context, key data.Key) (*waiter, error)

// pair is one holder contending with one waiter for one key.
type pair struct {
	r      *run
	key    data.Key
	holder *pgx.Conn
	wait   waiterFactory
}

// runHandoff runs one pair (pollers: Clients/4, at least 1, side by side),
// so the latency is one handoff's, not a queue of them. Each round: the
// holder acquires; the waiter tries, is refused and waits; after a random
// pause the holder releases at t0; the waiter owns the lease at t1; t1-t0 is
// recorded; the waiter releases. Rounds that start in the measured window are
// recorded, and each pair records at least one.
func (r *run) runHandoff(ctx context.Context, w workload, m handoffMode) ([]Result, error) {
	n := 1
	if m.concurrent {
		n = max(1, r.cfg.Clients/4)
	}
	keys := r.keys(w.name, n)
	var lw *leaseWaiters
	if m.poll == 0 {
		var err error
		if lw, err = r.startLeaseWaiters(ctx, keys); err != nil {
			return nil, err
		}
		defer lw.Close()
	}
	perPair := 1 // a holder; a poller has a connection of its own too
	if lw == nil {
		perPair = 2
	}
	conns, err := r.openConns(ctx, n*perPair)
	if err != nil {
		return nil, err
	}
	defer closeConns(conns)
	pairs := make([]*pair, n)
	for i := range pairs {
		p := &pair{r: r, key: keys[i], holder: conns[i*perPair]}
		if lw != nil {
			p.wait = lw.start
		} else {
			p.wait = r.pollWaiter(conns[i*perPair+1], m.poll)
		}
		pairs[i] = p
	}
	r.checkpoint(ctx)

	rounds := make([]roundFunc, len(pairs))
	for i, p := range pairs {
		rounds[i] = func(ctx context.Context) (time.Duration, error) { return p.round(ctx, m) }
	}
	h, window, err := r.measureRounds(ctx, rounds)
	if err != nil {
		return nil, err
	}
	res := newResult(w.name, m.desc, h, window)
	res.Percentiles = h.percentilesMs()
	res.Note = fmt.Sprintf("%d pair(s)", n)
	if lw != nil {
		if extra := lw.extraAttempts(); extra > 0 {
			res.Note += fmt.Sprintf(", %d retries beyond one per handoff", extra)
		}
	}
	return []Result{res}, nil
}

// round is one handoff; it returns release-start to waiter-owns.
func (p *pair) round(ctx context.Context, m handoffMode) (time.Duration, error) {
	holderRun, err := mustAcquire(ctx, p.holder, p.r.libAcquire, p.key, holdTTL)
	if err != nil {
		return 0, err
	}
	w, err := p.wait(ctx, p.key)
	if err != nil {
		return 0, err
	}
	defer w.release(context.WithoutCancel(ctx)) //nolint:errcheck // a second call after the one below is a no-op
	if !sleepCtx(ctx, rand.N(m.pause+1)) {
		return 0, ctx.Err()
	}
	t0 := time.Now()
	if err := p.r.libRelease(ctx, p.holder, p.key, holderRun); err != nil {
		return 0, err
	}
	t1, err := w.owned(ctx)
	if err != nil {
		return 0, err
	}
	return t1.Sub(t0), w.release(ctx)
}

// pollWaiter makes waiters that retry acquire on conn every interval from
// their first refused attempt, as lock clients without notifications do.
func (r *run) pollWaiter(conn *pgx.Conn, interval time.Duration) waiterFactory {
	return func(ctx context.Context, key data.Key) (*waiter, error) {
		run := uuid.New()
		got, err := r.libAcquire(ctx, conn, key, run, holdTTL)
		if err != nil {
			return nil, err
		}
		if got {
			return nil, fmt.Errorf("handoff %s: waiter granted while the holder holds it", key)
		}
		return startWaiter(ctx, func(ctx context.Context) waitOutcome {
			for {
				if !sleepCtx(ctx, interval) {
					return waitOutcome{err: ctx.Err()}
				}
				ok, err := r.libAcquire(ctx, conn, key, run, holdTTL)
				if err != nil {
					return waitOutcome{err: err}
				}
				if ok {
					return waitOutcome{at: time.Now(), release: func(ctx context.Context) error { return r.libRelease(ctx, conn, key, run) }}
				}
			}
		}), nil
	}
}
