package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// feed is a data.Listener on the bench database with an owner: startFeed
// serves it (data.Listener.Serve); Stop cancels it and waits for it.
type feed struct {
	store  *data.Store
	lst    *data.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startFeed opens a store, starts a listener and waits until it is live, then
// passes every event (with the time its batch arrived) and every resync
// marker to onEvent and onResync (on one goroutine).
func (r *run) startFeed(ctx context.Context, onEvent func(data.Event, time.Time), onResync func()) (*feed, error) {
	store, err := r.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	f := &feed{store: store, lst: store.NewListener(data.ListenerConfig{Buffer: 1 << 16})}
	fctx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	f.wg.Go(func() {
		_ = f.lst.Serve(fctx, data.HandlerFunc(func(_ context.Context, d data.Delivery) {
			at := time.Now()
			if d.Resync && onResync != nil {
				onResync()
			}
			for _, ev := range d.Events {
				onEvent(ev, at)
			}
		}))
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
		if st.Status == data.ListenerLive {
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

// monitorFeed is a monitor.Feed, the monitor's data layer, run as the monitor
// runs it: a goroutine that takes batches with Next and hands each event to
// onEvent with the time Next returned it.
type monitorFeed struct {
	store *data.Store
	stop  func()
	wg    sync.WaitGroup
}

// startMonitorFeed starts a Feed and returns once its first resync has been
// taken (its listener is live).
func (r *run) startMonitorFeed(ctx context.Context, cfg monitor.FeedConfig, onEvent func(data.Event, time.Time)) (*monitorFeed, error) {
	store, err := r.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	feed := monitor.NewFeed(store, cfg)
	mf := &monitorFeed{store: store, stop: feed.Start(ctx)}
	synced := make(chan struct{})
	mf.wg.Go(func() {
		first := true
		for {
			b, ok := feed.Next()
			if !ok {
				return
			}
			at := time.Now()
			for _, it := range b.Items {
				switch {
				case it.Event != nil:
					onEvent(*it.Event, at)
				case it.Sync != nil && first:
					first = false
					close(synced)
				}
			}
		}
	})
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-synced:
		return mf, nil
	case <-t.C:
		mf.Stop()
		return nil, errors.New("the monitor feed did not sync within 30s")
	case <-ctx.Done():
		mf.Stop()
		return nil, ctx.Err()
	}
}

// Stop stops the feed, waits for its consumer and closes the store.
func (mf *monitorFeed) Stop() {
	mf.stop()
	mf.wg.Wait()
	mf.store.Close()
}
