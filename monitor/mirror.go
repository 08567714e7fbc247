package monitor

import (
	"context"
	"sync"
	"time"

	"github.com/leasetop/leasetop/data"
)

// Mirror runs a Feed into a State without a screen: the monitor's view of
// the database for tests and tools. It is safe for concurrent use.
type Mirror struct {
	feed *Feed

	mu      sync.Mutex
	state   *State
	changed chan struct{} // closed and replaced after every applied batch
}

// NewMirror returns a mirror of store's database. Start it with Run.
func NewMirror(store *data.Store, feed FeedConfig, state Config) *Mirror {
	return &Mirror{
		feed:    NewFeed(store, feed),
		state:   NewState(state),
		changed: make(chan struct{}),
	}
}

// Feed returns the mirror's feed (for Resync).
func (m *Mirror) Feed() *Feed { return m.feed }

// Run runs the feed and applies its batches until ctx is cancelled; it
// returns when the feed has stopped.
func (m *Mirror) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = m.feed.Run(ctx) })
	for {
		b, ok := m.feed.Next()
		if !ok {
			return nil
		}
		m.mu.Lock()
		m.state.Apply(b, time.Now())
		close(m.changed)
		m.changed = make(chan struct{})
		m.mu.Unlock()
	}
}

// Read calls fn with the state under the mirror's lock. fn must not keep the
// pointer.
func (m *Mirror) Read(fn func(s *State)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m.state)
}

// WaitFor waits until cond, called under the lock after every batch (and at
// least every 50 ms, for conditions on time), returns true. It returns
// ctx's error if ctx ends first.
func (m *Mirror) WaitFor(ctx context.Context, cond func(s *State) bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		m.mu.Lock()
		ok, changed := cond(m.state), m.changed
		m.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-tick.C:
		}
	}
}
