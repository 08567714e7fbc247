package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
	"github.com/leasetop/leasetop/lease"
)

// leaseWaiters are NOTIFY-woken waiters: lease.Client.Wait, the library's
// own waiting acquire, on one Client for all pairs. A permanent background
// waiter on a key of its own keeps the Client's shared listener up, as in a
// process that competes for many sessions (a lone waiter would first pay for
// the listener's connection; its resync on connecting still wakes it).
//
// The Client's store carries a query tracer, the only way to see from outside
// that Wait has been refused once and is now waiting: the moment a round may
// release.
type leaseWaiters struct {
	store   *data.Store
	client  *lease.Client
	tracer  *acquireTracer
	permits map[data.Key]lease.Permit
	rounds  atomic.Int64

	stopIdle context.CancelFunc
	wg       sync.WaitGroup
}

func (r *run) startLeaseWaiters(ctx context.Context, keys []data.Key) (*leaseWaiters, error) {
	tr := &acquireTracer{refused: map[data.Key]chan struct{}{}, listening: make(chan struct{}, 1)}
	for _, k := range keys {
		tr.refused[k] = make(chan struct{}, 1)
	}
	store, err := r.openStore(ctx, tr)
	if err != nil {
		return nil, err
	}
	client, err := lease.New(store, lease.Config{TTL: 30 * time.Second})
	if err != nil {
		store.Close()
		return nil, err
	}
	lw := &leaseWaiters{store: store, client: client, tracer: tr, permits: map[data.Key]lease.Permit{}}
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	for _, k := range slices.Concat(keys, []data.Key{idleKey(keys)}) {
		if lw.permits[k], err = client.Authorize(ctx, allow, k, "bench waiter"); err != nil {
			lw.Close()
			return nil, err
		}
	}
	if err := lw.startIdle(ctx, r, idleKey(keys)); err != nil {
		lw.Close()
		return nil, err
	}
	return lw, nil
}

// idleKey is the key of the background waiter of the workload whose keys
// are keys: a session of its own in their account, so that each workload
// that starts waiters (handoff-notify, takeover) has its own, held for the
// whole run.
func idleKey(keys []data.Key) data.Key { return data.Key{Account: keys[0].Account, Session: "idle"} }

// startIdle holds the idle key and starts a waiter on it that waits until
// Close, then waits for the Client's listener to be listening.
func (lw *leaseWaiters) startIdle(ctx context.Context, r *run, idle data.Key) error {
	if _, err := mustAcquire(ctx, r.admin, r.libAcquire, idle, holdTTL); err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	lw.stopIdle = cancel
	lw.wg.Go(func() {
		if l, err := lw.client.Wait(ictx, lw.permits[idle]); err == nil {
			_ = l.Release(ictx) // the holder's lease cannot expire during a run; be tidy anyway
		}
	})
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-lw.tracer.listening:
		return nil
	case <-t.C:
		return errors.New("the lease client's listener did not start listening within 30s")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the idle waiter and closes the Client and its store.
func (lw *leaseWaiters) Close() {
	if lw.stopIdle != nil {
		lw.stopIdle()
	}
	lw.wg.Wait()
	lw.client.Close()
	lw.store.Close()
}

// extraAttempts is how many refused attempts the waiters made beyond the
// first of each round: wake-ups that found the lease still held, or fallback
// polls.
func (lw *leaseWaiters) extraAttempts() int64 {
	return lw.tracer.refusals.Load() - lw.rounds.Load()
}

// start is a waiterFactory: it starts Wait on key and returns once Wait's
// first attempt was refused.
func (lw *leaseWaiters) start(ctx context.Context, key data.Key) (*waiter, error) {
	refused := lw.tracer.refused[key]
	select { // forget a refusal from an earlier round
	case <-refused:
	default:
	}
	lw.rounds.Add(1)
	w := startWaiter(ctx, func(ctx context.Context) waitOutcome {
		l, err := lw.client.Wait(ctx, lw.permits[key])
		if err != nil {
			return waitOutcome{err: err}
		}
		return waitOutcome{at: time.Now(), release: l.Release}
	})
	select {
	case <-refused:
		return w, nil
	case o := <-w.done:
		w.done <- o
		_ = w.release(ctx)
		if o.err != nil {
			return nil, o.err
		}
		return nil, fmt.Errorf("handoff %s: waiter granted while the holder holds it", key)
	case <-ctx.Done():
		_ = w.release(context.WithoutCancel(ctx))
		return nil, ctx.Err()
	}
}

// acquireTracer watches the Client's queries: it signals a key's channel
// each time an acquire of that key is refused (returns no row), and
// listening once the listener's LISTEN has completed.
type acquireTracer struct {
	refused   map[data.Key]chan struct{} // fixed before use; read-only after
	refusals  atomic.Int64
	listening chan struct{}
}

type (
	tracedAcquire struct{}
	tracedListen  struct{}
)

// TraceQueryStart marks the calls the tracer cares about.
func (t *acquireTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	switch {
	case d.SQL == sqlcall.Acquire && len(d.Args) >= 2:
		acct, _ := d.Args[0].(string)
		sess, _ := d.Args[1].(string)
		return context.WithValue(ctx, tracedAcquire{}, data.Key{Account: acct, Session: sess})
	case strings.HasPrefix(strings.ToLower(d.SQL), "listen "):
		return context.WithValue(ctx, tracedListen{}, true)
	}
	return ctx
}

// TraceQueryEnd signals refusals and LISTEN.
func (t *acquireTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if ctx.Value(tracedListen{}) != nil && d.Err == nil {
		signalCh(t.listening)
		return
	}
	key, ok := ctx.Value(tracedAcquire{}).(data.Key)
	if !ok || d.Err != nil || d.CommandTag.RowsAffected() != 0 {
		return
	}
	if ch := t.refused[key]; ch != nil {
		t.refusals.Add(1)
		signalCh(ch)
	}
}

// signalCh sends on a 1-buffered channel without blocking.
func signalCh(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
