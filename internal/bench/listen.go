package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leasetop/leasetop/data"
)

// feed is a data.Listener on the bench database with an owner: Start runs it
// and a consumer goroutine; Stop cancels both and waits for them.
type feed struct {
	store  *data.Store
	lst    *data.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startFeed opens a store, starts a listener and waits until it is live, then
// passes every event and resync signal to consume (on one goroutine).
func (r *run) startFeed(ctx context.Context, onEvent func(data.Event, time.Time), onResync func()) (*feed, error) {
	store, err := data.Open(ctx, r.cfg.DSN)
	if err != nil {
		return nil, err
	}
	f := &feed{store: store, lst: store.NewListener(data.ListenerConfig{Buffer: 1 << 16})}
	fctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	f.wg.Go(func() { _ = f.lst.Run(fctx) })
	f.wg.Go(func() {
		for {
			select {
			case <-fctx.Done():
				return
			case ev := <-f.lst.Events():
				onEvent(ev, time.Now())
			case <-f.lst.Resync():
				if onResync != nil {
					onResync()
				}
			}
		}
	})
	if err := f.waitLive(ctx, 30*time.Second); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

// waitLive waits for the listener's LIVE state.
func (f *feed) waitLive(ctx context.Context, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		st := f.lst.State()
		if st.Status == data.StatusLive {
			return nil
		}
		select {
		case <-f.lst.StateChanged():
		case <-deadline.C:
			if st.Err != nil {
				return fmt.Errorf("listener not live after %v: %w", timeout, st.Err)
			}
			return errors.New("listener not live after " + timeout.String())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stop stops the listener and its consumer and closes the store.
func (f *feed) Stop() {
	f.cancel()
	f.wg.Wait()
	f.store.Close()
}
