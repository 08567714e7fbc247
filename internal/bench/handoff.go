package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
)

// handoffMode is how a waiting acquirer learns that the lease is free.
type handoffMode struct {
	desc string
	// poll is the retry interval of a polling waiter; 0 means the waiter is
	// woken by the release's NOTIFY (through a data.Listener).
	poll time.Duration
	// pause is the longest random pause between "the waiter is waiting" and
	// the release: for a poller, one interval, so releases fall uniformly
	// between its attempts.
	pause time.Duration
}

var (
	handoffNotify = handoffMode{
		desc: "holder releases -> waiter owns the lease; waiter woken by the release's NOTIFY (data.Listener)", pause: 10 * time.Millisecond}
	handoffPoll100ms = handoffMode{
		desc: "the same with a waiter that retries acquire every 100ms", poll: 100 * time.Millisecond, pause: 100 * time.Millisecond}
	handoffPoll1s = handoffMode{
		desc: "the same with a waiter that retries acquire every 1s (consul lock, k8s RetryPeriod-like)", poll: time.Second, pause: time.Second}
)

// notifyFallback is how long a NOTIFY-woken waiter waits before it retries
// anyway (a lost notification must not hang the bench); each use is counted.
const notifyFallback = 2 * time.Second

func handoffWorkload(m handoffMode) func(context.Context, *run, workload) ([]Result, error) {
	return func(ctx context.Context, r *run, w workload) ([]Result, error) { return r.runHandoff(ctx, w, m) }
}

// wakers routes released events to the waiter of each key.
type wakers struct {
	mu sync.Mutex
	ch map[data.Key]chan uuid.UUID // receives the run id that released; uuid.Nil: re-check
}

func (wk *wakers) event(ev data.Event, _ time.Time) {
	if !ev.Kind.Ends() {
		return
	}
	wk.send(ev.Key, ev.RunID)
}

func (wk *wakers) resync() {
	wk.mu.Lock()
	keys := make([]data.Key, 0, len(wk.ch))
	for k := range wk.ch {
		keys = append(keys, k)
	}
	wk.mu.Unlock()
	for _, k := range keys {
		wk.send(k, uuid.Nil)
	}
}

func (wk *wakers) send(k data.Key, run uuid.UUID) {
	wk.mu.Lock()
	ch := wk.ch[k]
	wk.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- run:
	default: // the waiter is behind; its fallback timer covers it
	}
}

// pair is one holder and one waiter contending for one key, each on its own
// connection.
type pair struct {
	key            data.Key
	holder, waiter *pgx.Conn
	wake           chan uuid.UUID // nil for a poller
	hist           Histogram
	fallbacks      int
}

// runHandoff runs Clients/4 (at least 1) pairs side by side. Each round: the
// holder acquires; the waiter tries, is refused and starts waiting; after a
// random pause the holder releases at t0; the waiter's acquire succeeds at t1;
// t1-t0 is recorded; the waiter releases. Rounds that start in the measured
// window are recorded, and each pair records at least one.
func (r *run) runHandoff(ctx context.Context, w workload, m handoffMode) ([]Result, error) {
	n := max(1, r.cfg.Clients/4)
	keys := r.keys(w.name, n)
	pairs := make([]*pair, n)
	wk := &wakers{ch: map[data.Key]chan uuid.UUID{}}
	var conns []*pgx.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close(context.WithoutCancel(ctx))
		}
	}()
	for i := range pairs {
		p := &pair{key: keys[i]}
		for _, c := range []**pgx.Conn{&p.holder, &p.waiter} {
			conn, err := r.connect(ctx)
			if err != nil {
				return nil, err
			}
			conns = append(conns, conn)
			*c = conn
		}
		if m.poll == 0 {
			p.wake = make(chan uuid.UUID, 64)
			wk.ch[p.key] = p.wake
		}
		pairs[i] = p
	}
	if m.poll == 0 {
		f, err := r.startFeed(ctx, wk.event, wk.resync)
		if err != nil {
			return nil, err
		}
		defer f.Stop()
	}
	r.checkpoint(ctx)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var phase atomic.Int32
	var wg sync.WaitGroup
	for _, p := range pairs {
		wg.Go(func() {
			if err := p.rounds(ctx, m, &phase); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	window := r.measure(ctx, &phase)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	var h Histogram
	fallbacks := 0
	for _, p := range pairs {
		h.Merge(&p.hist)
		fallbacks += p.fallbacks
	}
	res := newResult(w.name, m.desc, &h, window)
	res.Note = fmt.Sprintf("%d pairs", n)
	if fallbacks > 0 {
		res.Note += fmt.Sprintf(", %d wake-ups by the %v fallback instead of NOTIFY", fallbacks, notifyFallback)
	}
	return []Result{res}, nil
}

// rounds runs handoff rounds until the phase is done and at least one round
// was recorded (a 1 s poller may need longer than a short window).
func (p *pair) rounds(ctx context.Context, m handoffMode, phase *atomic.Int32) error {
	for ctx.Err() == nil {
		ph := phase.Load()
		if ph == phaseDone && p.hist.Count() > 0 {
			return nil
		}
		recording := ph != phaseWarmup
		d, err := p.round(ctx, m)
		if err != nil {
			return err
		}
		if recording {
			p.hist.Record(d)
		}
	}
	return nil
}

// round is one handoff; it returns release-start to waiter-owns.
func (p *pair) round(ctx context.Context, m handoffMode) (time.Duration, error) {
	holderRun, err := mustAcquire(ctx, p.holder, acquireSQL, p.key, holdTTL)
	if err != nil {
		return 0, err
	}
	waiterRun := uuid.New()
	got, err := acquireOnce(ctx, p.waiter, acquireSQL, p.key, waiterRun, holdTTL)
	if err != nil {
		return 0, err
	}
	if got {
		return 0, fmt.Errorf("handoff %s: waiter granted while the holder holds it", p.key)
	}
	type outcome struct {
		at  time.Time
		err error
	}
	done := make(chan outcome, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // owned: round waits for done or cancels wctx and waits below
		at, err := p.wait(wctx, m, holderRun, waiterRun)
		done <- outcome{at, err}
	}()
	if !sleepCtx(ctx, rand.N(m.pause+1)) {
		stop()
		<-done
		return 0, ctx.Err()
	}
	t0 := time.Now()
	if err := release(ctx, p.holder, p.key, holderRun); err != nil {
		stop()
		<-done
		return 0, err
	}
	o := <-done
	if o.err != nil {
		return 0, o.err
	}
	return o.at.Sub(t0), release(ctx, p.waiter, p.key, waiterRun)
}

// wait retries acquire for waiterRun until granted: after each poll interval,
// or when woken by holderRun's release (or a resync, or the fallback timer).
func (p *pair) wait(ctx context.Context, m handoffMode, holderRun, waiterRun uuid.UUID) (time.Time, error) {
	for {
		if m.poll > 0 {
			if !sleepCtx(ctx, m.poll) {
				return time.Time{}, ctx.Err()
			}
		} else if err := p.woken(ctx, holderRun); err != nil {
			return time.Time{}, err
		}
		ok, err := acquireOnce(ctx, p.waiter, acquireSQL, p.key, waiterRun, holdTTL)
		if err != nil {
			return time.Time{}, err
		}
		if ok {
			return time.Now(), nil
		}
	}
}

// woken waits for holderRun's release, a resync or the fallback timer.
func (p *pair) woken(ctx context.Context, holderRun uuid.UUID) error {
	t := time.NewTimer(notifyFallback)
	defer t.Stop()
	for {
		select {
		case run := <-p.wake:
			if run == holderRun || run == uuid.Nil {
				return nil
			}
		case <-t.C:
			p.fallbacks++
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
