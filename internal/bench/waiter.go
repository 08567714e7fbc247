package bench

import (
	"context"
	"time"
)

// waiter is a waiting acquirer that has been refused once and now waits for
// the lease in a goroutine it owns: lease.Client.Wait (leasewait.go) or a
// poller (handoff.go). release cancels the goroutine and receives its
// outcome.
type waiter struct {
	cancel context.CancelFunc
	done   chan waitOutcome // the wait's outcome; whoever takes it early puts it back
	out    *waitOutcome     // set once the wait has returned
}

// waitOutcome is how a wait ended: when it owned the lease and how to give it
// up, or its error.
type waitOutcome struct {
	at      time.Time
	release func(context.Context) error // nil when it holds nothing
	err     error
}

// startWaiter runs wait in a goroutine owned by the returned waiter.
func startWaiter(ctx context.Context, wait func(ctx context.Context) waitOutcome) *waiter {
	wctx, cancel := context.WithCancel(ctx)
	w := &waiter{cancel: cancel, done: make(chan waitOutcome, 1)}
	go func() { w.done <- wait(wctx) }()
	return w
}

// owned blocks until the waiter owns the lease and returns when it did.
func (w *waiter) owned(ctx context.Context) (time.Time, error) {
	select {
	case o := <-w.done:
		w.out = &o
		return o.at, o.err
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// release gives the lease up again (untimed) or, while the wait still runs,
// stops it, releasing whatever it got. A second call does nothing.
func (w *waiter) release(ctx context.Context) error {
	if w.out == nil {
		w.cancel()
		o := <-w.done
		w.out = &o
	}
	defer w.cancel()
	rel := w.out.release
	w.out.release = nil
	if rel == nil {
		return nil
	}
	return rel(ctx)
}
