package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// queueMembers is how many waiters the queue workload lines up (at most
// --clients).
const queueMembers = 16

// runQueue is the queue workload: queueMembers waiters, each a
// lease.Client of its own (a process's), queue for one session in a known
// order behind a holder; then each, granted the lease, queues again (a fresh
// run id, behind the others) and releases once its new ticket is in, so the
// grants go round in that order. It records each handoff through the queue
// (release -> the next waiter owns the lease) and counts the grants out of
// order, which must be 0.
func (r *run) runQueue(ctx context.Context, w workload) ([]Result, error) {
	n := min(queueMembers, max(2, r.cfg.Clients))
	key := r.keys(w.name, 1)[0]
	store, err := r.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	opener, err := mustAcquire(ctx, r.admin, r.libAcquire, key, holdTTL)
	if err != nil {
		return nil, err
	}
	q := &queueRun{key: key, store: store, n: n, last: -1}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	for i := range n {
		m, err := q.member(ctx, i)
		if err != nil {
			return nil, err
		}
		defer m.client.Close()
		first := m.queue(ctx)
		if err := q.waitTicket(ctx, fmt.Sprintf("queue-%02d", i)); err != nil {
			return nil, err
		}
		wg.Go(func() {
			if err := m.loop(ctx, first); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	q.released.Store(time.Now().UnixNano())
	if err := r.libRelease(ctx, r.admin, key, opener); err != nil {
		return nil, err
	}
	var phase atomic.Int32
	q.phase = &phase
	window := r.measure(ctx, &phase)
	cancel(nil)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	res := newResult(w.name, fmt.Sprintf("%d waiters, each a lease.Client, queued in a known order: release -> the queue's next waiter owns the lease", n), &q.hist, window)
	res.Note = fmt.Sprintf("%d grants (%d rounds of %d), %d out of order", q.grants, q.grants/n, n, q.outOfOrder)
	if q.outOfOrder > 0 {
		res.Error = fmt.Sprintf("%d of %d grants out of queue order", q.outOfOrder, q.grants)
	}
	return []Result{res}, nil
}

// queueRun is the queue workload's shared record of the grants.
type queueRun struct {
	key      data.Key
	store    *data.Store
	n        int
	phase    *atomic.Int32
	released atomic.Int64 // unix ns of the latest release's start

	mu         sync.Mutex
	hist       Histogram
	last       int // the member granted last; -1 before the first
	grants     int
	outOfOrder int
}

// granted records member i's grant at t.
func (q *queueRun) granted(i int, t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.last >= 0 && i != (q.last+1)%q.n {
		q.outOfOrder++
	}
	q.last = i
	q.grants++
	if q.phase != nil && q.phase.Load() == phaseMeasure {
		q.hist.Record(t.Sub(time.Unix(0, q.released.Load())))
	}
}

// waitTicket polls the queue until a ticket labelled holder is in it.
func (q *queueRun) waitTicket(ctx context.Context, holder string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		tickets, err := q.store.QueueOf(ctx, q.key)
		if err != nil {
			return err
		}
		for _, t := range tickets {
			if t.Holder == holder {
				return nil
			}
		}
		if !sleepCtx(ctx, time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("queue: %s's ticket did not show within 30s", holder)
}

// queueMember is one waiter.
type queueMember struct {
	q      *queueRun
	i      int
	client *lease.Client
	permit lease.Permit
}

func (q *queueRun) member(ctx context.Context, i int) (*queueMember, error) {
	client, err := lease.New(q.store, lease.Config{TTL: 30 * time.Second, PollInterval: time.Minute})
	if err != nil {
		return nil, err
	}
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	p, err := client.Authorize(ctx, allow, q.key, fmt.Sprintf("queue-%02d", i))
	if err != nil {
		client.Close()
		return nil, err
	}
	return &queueMember{q: q, i: i, client: client, permit: p}, nil
}

type queued struct {
	l   *lease.Lease
	err error
}

// queue starts a Queue call and returns where its outcome arrives.
func (m *queueMember) queue(ctx context.Context) <-chan queued {
	ch := make(chan queued, 1)
	go func() {
		l, err := m.client.Queue(ctx, m.permit)
		ch <- queued{l, err}
	}()
	return ch
}

// loop takes the grants of member m until ctx ends: on each, it queues
// again and releases once its new ticket is in.
func (m *queueMember) loop(ctx context.Context, next <-chan queued) error {
	for {
		var got queued
		select {
		case got = <-next:
		case <-ctx.Done():
			return nil
		}
		if got.err != nil {
			return got.err
		}
		m.q.granted(m.i, time.Now())
		next = m.queue(ctx)
		if err := m.q.waitTicket(ctx, m.permit.Request().Holder); err != nil {
			_ = got.l.Release(context.WithoutCancel(ctx))
			return err
		}
		m.q.released.Store(time.Now().UnixNano())
		if err := got.l.Release(ctx); err != nil && ctx.Err() == nil {
			return err
		}
	}
}
