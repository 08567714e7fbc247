package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
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

// waiting is a waiter that has been refused once and is now waiting for the
// lease.
type waiting interface {
	// owned blocks until the waiter owns the lease and returns when it did.
	owned(ctx context.Context) (time.Time, error)
	// release gives the lease up again (untimed) or, if it was never
	// granted, stops waiting.
	release(ctx context.Context) error
}

// waiterFactory starts a waiter on key while holderRun holds it and returns
// once the waiter has been refused (so it is waiting).
type waiterFactory func(ctx context.Context, key data.Key) (waiting, error)

// pair is one holder contending with one waiter for one key.
type pair struct {
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
	var conns []*pgx.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close(context.WithoutCancel(ctx))
		}
	}()
	connect := func() (*pgx.Conn, error) {
		c, err := r.connect(ctx)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	var lw *leaseWaiters
	if m.poll == 0 {
		var err error
		if lw, err = r.startLeaseWaiters(ctx, keys); err != nil {
			return nil, err
		}
		defer lw.Close()
	}
	pairs := make([]*pair, n)
	for i := range pairs {
		p := &pair{key: keys[i]}
		var err error
		if p.holder, err = connect(); err != nil {
			return nil, err
		}
		if lw != nil {
			p.wait = lw.start
		} else {
			wc, err := connect()
			if err != nil {
				return nil, err
			}
			p.wait = pollWaiter(wc, m.poll)
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
	holderRun, err := mustAcquire(ctx, p.holder, acquireSQL, p.key, holdTTL)
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
	if err := release(ctx, p.holder, p.key, holderRun); err != nil {
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
func pollWaiter(conn *pgx.Conn, interval time.Duration) waiterFactory {
	return func(ctx context.Context, key data.Key) (waiting, error) {
		run := uuid.New()
		got, err := acquireOnce(ctx, conn, acquireSQL, key, run, holdTTL)
		if err != nil {
			return nil, err
		}
		if got {
			return nil, fmt.Errorf("handoff %s: waiter granted while the holder holds it", key)
		}
		wctx, cancel := context.WithCancel(ctx)
		pw := &pollWaiting{conn: conn, key: key, run: run, cancel: cancel, done: make(chan pollOutcome, 1)}
		go func() { // owned by pw: release cancels it and receives done
			at, err := pw.poll(wctx, interval)
			pw.done <- pollOutcome{at: at, err: err}
		}()
		return pw, nil
	}
}

type pollOutcome struct {
	at  time.Time
	err error
}

// pollWaiting is one polling waiter; its conn is the poller's until done.
type pollWaiting struct {
	conn   *pgx.Conn
	key    data.Key
	run    uuid.UUID
	cancel context.CancelFunc
	done   chan pollOutcome
	out    *pollOutcome
}

func (pw *pollWaiting) poll(ctx context.Context, interval time.Duration) (time.Time, error) {
	for {
		if !sleepCtx(ctx, interval) {
			return time.Time{}, ctx.Err()
		}
		ok, err := acquireOnce(ctx, pw.conn, acquireSQL, pw.key, pw.run, holdTTL)
		if err != nil {
			return time.Time{}, err
		}
		if ok {
			return time.Now(), nil
		}
	}
}

func (pw *pollWaiting) owned(ctx context.Context) (time.Time, error) {
	select {
	case o := <-pw.done:
		pw.out = &o
		return o.at, o.err
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// release stops the poller if it still runs and releases the lease if it got
// it.
func (pw *pollWaiting) release(ctx context.Context) error {
	if pw.out == nil {
		pw.cancel()
		o := <-pw.done
		pw.out = &o
	}
	defer pw.cancel()
	if pw.out.err != nil || pw.out.at.IsZero() {
		return nil
	}
	pw.out.at = time.Time{}
	return release(ctx, pw.conn, pw.key, pw.run)
}
