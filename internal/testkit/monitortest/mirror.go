package monitortest

import (
	"context"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Mirror runs a monitor.Feed into a monitor.State without a screen: the
// monitor's view of the database for tests. It is safe for concurrent use.
//
// Two handles let a test look at and lean on the consumer's side, which the
// terminal keeps to itself: OnBatch sees every batch as it is applied (to
// count what the feed delivered), and Pause stops taking batches at all, so
// the feed must keep reading the database and bound what it holds for a
// consumer that has fallen behind (monitor.FeedConfig.MaxPending).
type Mirror struct {
	feed  *monitor.Feed  // a mirror of one database
	feeds *monitor.Feeds // a mirror of several (NewMirrorOf)

	mu      sync.Mutex
	state   *monitor.State
	changed chan struct{}       // closed and replaced after every applied batch
	onBatch func(monitor.Batch) // OnBatch's hook, nil for none
	resume  chan struct{}       // closed by Resume; nil when not paused
}

// NewMirror returns a mirror of store's database. Start it with Run.
func NewMirror(store *data.Store, feed monitor.FeedConfig, state monitor.Config) *Mirror {
	return &Mirror{
		feed:    monitor.NewFeed(store, feed),
		state:   monitor.NewState(state),
		changed: make(chan struct{}),
	}
}

// NewMirrorOf returns a mirror of several databases: one State of them all,
// kept true by monitor.Feeds. Start it with Run.
func NewMirrorOf(contexts []monitor.Context, state monitor.Config) *Mirror {
	for _, c := range contexts {
		state.Contexts = append(state.Contexts, c.Name)
	}
	return &Mirror{
		feeds:   monitor.NewFeeds(contexts),
		state:   monitor.NewState(state),
		changed: make(chan struct{}),
	}
}

// Feed returns the mirror's feed (for Resync), nil for a mirror of several.
func (m *Mirror) Feed() *monitor.Feed { return m.feed }

// Feeds returns the feeds of a mirror of several databases, nil for a
// mirror of one.
func (m *Mirror) Feeds() *monitor.Feeds { return m.feeds }

// OnBatch makes Run call fn with every batch right after applying it, under
// the mirror's lock: fn sees the batches in order, each once, and must
// return quickly without calling the mirror's other methods. A later call
// replaces fn; nil removes it.
func (m *Mirror) OnBatch(fn func(monitor.Batch)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onBatch = fn
}

// Pause stops Run taking batches from the feed until Resume: a batch Run is
// already waiting for or applying is still applied, none after it. The feed
// goes on reading meanwhile (a paused mirror is a consumer that takes
// nothing, harsher than the terminal's pause, which only freezes the
// screen). Pausing a paused mirror does nothing.
func (m *Mirror) Pause() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resume == nil {
		m.resume = make(chan struct{})
	}
}

// Resume lets Run take batches again after Pause; the first batch then holds
// everything the feed kept (or a resync in place of what it could not keep).
func (m *Mirror) Resume() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resume != nil {
		close(m.resume)
		m.resume = nil
	}
}

// Run runs the feed and applies its batches until ctx is cancelled; it
// returns when the feed has stopped.
func (m *Mirror) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	run, next := m.feed.Run, m.feed.Next
	if m.feeds != nil {
		run, next = m.feeds.Run, m.feeds.Next
	}
	wg.Go(func() { _ = run(ctx) })
	for m.unpaused(ctx) {
		b, ok := next()
		if !ok {
			return nil
		}
		m.apply(b)
	}
	return nil
}

// unpaused waits while the mirror is paused. It reports false if ctx ended
// first.
func (m *Mirror) unpaused(ctx context.Context) bool {
	m.mu.Lock()
	resume := m.resume
	m.mu.Unlock()
	if resume == nil {
		return true
	}
	select {
	case <-resume:
		return true
	case <-ctx.Done():
		return false
	}
}

// apply applies one batch, calls the OnBatch hook and wakes WaitFor.
func (m *Mirror) apply(b monitor.Batch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.Apply(b, time.Now())
	if m.onBatch != nil {
		m.onBatch(b)
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// Read calls fn with the state under the mirror's lock. fn must not keep the
// pointer.
func (m *Mirror) Read(fn func(s *monitor.State)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m.state)
}

// WaitFor waits until cond, called under the lock after every batch (and at
// least every 50 ms, for conditions on time), returns true. It returns
// ctx's error if ctx ends first.
func (m *Mirror) WaitFor(ctx context.Context, cond func(s *monitor.State) bool) error {
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
