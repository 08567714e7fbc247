package data

import (
	"context"
	"sync"
	"time"
)

// Handler consumes what a Listener delivers (Serve), one delivery at a
// time, in order, on Serve's goroutine. It may block: the listener never
// waits for it (notifications that find no room are dropped and replaced
// by a resync marker), and a handler that reads notifications back
// (Listener.ReadBack) reports the ids it found no row for (Missing).
//
// A handler with more to do than deliveries says so by implementing
// StateHandler, WakeHandler or TimerHandler: Serve then calls those on the
// same goroutine, between deliveries, so that the handler's state needs no
// lock and one select loop serves every consumer.
type Handler interface {
	HandleDelivery(ctx context.Context, d Delivery)
}

// HandlerFunc is a function as a Handler.
type HandlerFunc func(ctx context.Context, d Delivery)

// HandleDelivery calls f(ctx, d).
func (f HandlerFunc) HandleDelivery(ctx context.Context, d Delivery) { f(ctx, d) }

// StateHandler is a Handler that follows the listener's connection state:
// Serve calls HandleState after each change (Listener.StateChanged).
type StateHandler interface {
	HandleState(ctx context.Context, st ListenerState)
}

// WakeHandler is a Handler that is asked for work of its own (a resync a
// caller requested): Serve calls HandleWake whenever Wake's channel
// receives.
type WakeHandler interface {
	Wake() <-chan struct{}
	HandleWake(ctx context.Context)
}

// TimerHandler is a Handler with timed work of its own (a periodic read, a
// rate-limited resync): Serve calls HandleTimer whenever Timer's channel
// receives. Timer is asked once; the handler resets the timer behind it.
type TimerHandler interface {
	Timer() <-chan time.Time
	HandleTimer(ctx context.Context)
}

// Serve runs the listener (Run) and hands what it delivers to h until ctx
// ends: the one loop over a listener's deliveries that every in-process
// consumer uses (monitor.Feed, lease.Client's notifier, the benchmark's).
// It returns once ctx has ended and the listener has stopped, with Run's
// error: a *DSNError when ListenerConfig.DSN does not parse (the listener
// stopped at once, and its State says why; h's timers and wake-ups are
// served all the same).
func (l *Listener) Serve(ctx context.Context, h Handler) error {
	var (
		wg     sync.WaitGroup
		runErr error
	)
	wg.Go(func() { runErr = l.Run(ctx) })
	defer wg.Wait()
	var (
		states <-chan struct{}
		wake   <-chan struct{}
		timer  <-chan time.Time
	)
	sh, _ := h.(StateHandler)
	if sh != nil {
		states = l.StateChanged()
	}
	wh, _ := h.(WakeHandler)
	if wh != nil {
		wake = wh.Wake()
	}
	th, _ := h.(TimerHandler)
	if th != nil {
		timer = th.Timer()
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return runErr
		case d := <-l.Deliveries():
			h.HandleDelivery(ctx, d)
		case <-states:
			sh.HandleState(ctx, l.State())
		case <-wake:
			wh.HandleWake(ctx)
		case <-timer:
			th.HandleTimer(ctx)
		}
	}
}
