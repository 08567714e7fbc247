package monitor

import (
	"context"
	"fmt"
	"time"
)

// idleContext returns a context for a read that may be long but must not
// stall: it ends when idle passes without a call to touch, with a cause
// that says so (a wrapped context.DeadlineExceeded). A resync of 1,000,000
// leases takes longer than any fixed timeout fit for a small one on a
// loaded machine, and cut off at a total timeout it failed every time;
// cut off only when nothing arrives, it is still cut off when
// the server or the network stops answering. stop releases the context.
func idleContext(ctx context.Context, idle time.Duration) (rctx context.Context, touch, stop func()) {
	rctx, cancel := context.WithCancelCause(ctx)
	cause := fmt.Errorf("read received nothing for %v: %w", idle, context.DeadlineExceeded)
	timer := time.AfterFunc(idle, func() { cancel(cause) })
	touch = func() { timer.Reset(idle) }
	stop = func() {
		timer.Stop()
		cancel(context.Canceled)
	}
	return rctx, touch, stop
}

// stalled returns the error a read on rctx returned, or the reason
// idleContext cut it off when it did.
func stalled(rctx context.Context, err error) error {
	if cause := context.Cause(rctx); cause != nil && cause != rctx.Err() {
		return cause
	}
	return err
}
